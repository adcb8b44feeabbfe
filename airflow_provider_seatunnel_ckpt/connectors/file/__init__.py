"""The File family, laid out as SeaTunnel's connector-file modules: the ``File``
connector (:mod:`.source`, :mod:`.sink`: any storage, parquet, csv, jsonl) and SeaTunnel's
file connectors on top of it (:mod:`.seatunnel_source`, :mod:`.seatunnel_sink`, their
options in :mod:`.config`), one module per storage plugin (:mod:`.local`, :mod:`.s3`,
:mod:`.oss`, :mod:`.hdfs`, each owning how its options map to a file system, over
:mod:`.storage`), one module per format (:mod:`.formats`), compression and character
codecs (:mod:`.codecs`) and archives (:mod:`.archives`). Imports nothing: the registry
(``connectors/__init__.py``) names the classes, which load when a job uses them."""
