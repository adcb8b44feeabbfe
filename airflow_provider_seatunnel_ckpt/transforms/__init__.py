"""Transforms: SeaTunnel's transforms-v2, each a :class:`..connectors.api.Transform`.

Built on the connector API (``connectors/api.py``, ``connectors/options.py``) and reached
only through the registry (``connectors/__init__.py``), which names each by a dotted
string: ``Sql`` and ``Filter`` (:mod:`.sql`, :mod:`.filter`, on the per-batch SQL engine
of ``sql/``), ``JsonPath`` (:mod:`.json_path`), and the column transforms ``Select``,
``Rename``, ``FieldMapper``, ``Copy``, ``Replace``, ``Split`` (:mod:`.fields`),
``FilterRowKind``, ``RowKindExtractor`` (:mod:`.row_kind`), ``Python`` and ``CountByKey``.
"""
