"""Which module runs which of SeaTunnel's job files in tests/fixtures/seatunnel/
connector-file-local-e2e: the lists test_seatunnel_file_archives.py checks the directory
against (every job file has a module that runs it)."""

from __future__ import annotations

#: the job files test_seatunnel_file_formats.py runs or loads
FORMATS_FILES = [
    "json/local_file_json_to_console_with_encoding.conf",
    "text/local_file_text_to_console_with_encoding.conf",
    "json/fake_to_local_file_json_with_encoding.conf",
    "text/fake_to_local_file_with_encoding.conf",
    "json/local_file_to_console.conf",
    "json/fake_to_local_file_json.conf",
    "json/fake_to_local_file_json_save_mode.conf",
    "xml/local_file_xml_to_assert.conf",
    "xml/local_file_zip_xml_to_assert.conf",
    "binary/local_file_binary_to_assert.conf",
    "binary/local_file_binary_to_local_file_binary.conf",
]

#: the LocalFile source jobs test_seatunnel_file_sources.py runs, and the rows each one's
#: sink gets (5 rows per file; a table each for multipletable)
SOURCE_JOBS = {
    "text/local_file_delimiter_assert.conf": 5,
    "text/local_file_text_projection_to_assert.conf": 5,
    "text/local_file_text_skip_headers.conf": 4,  # its first row is skipped as a header
    "text/local_file_text_to_assert_with_multipletable.conf": 10,
    "text/local_file_time_format_assert.conf": 5,
    "json/local_file_json_to_assert.conf": 5,
    "json/local_file_json_to_assert_with_multipletable.conf": 10,
    "orc/local_file_orc_projection_to_assert.conf": 5,
    "orc/local_file_orc_to_assert.conf": 5,
    "orc/local_file_orc_to_assert_with_multipletable.conf": 10,
    "orc/local_file_orc_to_assert_with_time_and_cast.conf": 5,
    "parquet/local_file_parquet_projection_to_assert.conf": 5,
    "parquet/local_file_parquet_to_assert.conf": 5,
    "parquet/local_file_parquet_to_assert_with_multipletable.conf": 10,
    "parquet/local_file_to_console.conf": 0,  # an empty directory (LocalFileIT's mkdir /tmp/fake_empty)
}
