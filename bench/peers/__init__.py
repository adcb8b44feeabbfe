"""Other engines that run SeaTunnel job files, to benchmark against and diff outputs with
(docs/testing.md, "Peers: SeaTunnel's Zeta")."""
