"""The configuration contract: seed examples load to the intended values, bad input
gets a one-line ConfigError naming the key path, and nothing is silently misread."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_seatunnel_ckpt.config import (
    DEFAULT_NAMESPACE,
    CheckpointConfig,
    ConfigError,
    load_config,
    mask_secrets,
)

FIXTURES = Path(__file__).parent.parent / "fixtures"
PREFIX = "seatunnel.engine.checkpoint"


def fixture(name: str) -> Path:
    return FIXTURES / name


# ------------------------------------------------------------------ seed examples

SEED_EXPECTATIONS = {
    # file: (interval, timeout, max_concurrent, tolerable, plugin-config subset)
    "seed000_oss.yaml": (6000, 7000, 1, 2, {"storage.type": "oss", "oss.bucket": "your-bucket"}),
    "seed001_oss.yaml": (6000, 7000, 1, 0, {"storage.type": "oss", "fs.oss.endpoint": "endpoint address"}),
    "seed000_s3_simple_credentials.yaml": (
        6000,
        7000,
        1,
        2,
        {"storage.type": "s3", "fs.s3a.access.key": "your-access-key"},
    ),
    "seed001_s3_simple_credentials.yaml": (6000, 7000, 1, 0, {"s3.bucket": "your-bucket"}),
    "seed000_s3_instance_profile.yaml": (6000, 7000, 1, 2, {"fs.s3a.endpoint": "your-endpoint"}),
    "seed001_s3_instance_profile.yaml": (6000, 7000, 1, 0, {"s3.bucket": "your-bucket"}),
    "seed000_hdfs_kerberos.yaml": (
        10000,
        60000,
        1,
        0,
        {"fs.defaultFS": "hdfs://localhost:9000", "kerberosPrincipal": "your-kerberos-principal"},
    ),
    "seed001_hdfs_kerberos.yaml": (10000, 60000, 1, 0, {"kerberosKeytab": "your-kerberos-keytab"}),
    "seed001_hdfs_ha.yaml": (
        10000,
        60000,
        1,
        0,
        {"fs.defaultFS": "hdfs://usdp-bing", "seatunnel.hadoop.dfs.nameservices": "usdp-bing"},
    ),
    "seed000_localfile.yaml": (6000, 7000, 1, 2, {"storage.type": "hdfs", "fs.defaultFS": "file:///"}),
    "seed001_localfile.yaml": (6000, 7000, 1, 0, {"fs.defaultFS": "file:///"}),
    "seed000_generic.yaml": (10000, 60000, 1, 0, {"K1": "V1", "K2": "V2"}),
    "seed001_generic.yaml": (10000, 60000, 1, 0, {"K1": "V1"}),
}


@pytest.mark.parametrize("name", sorted(SEED_EXPECTATIONS))
def test_seed_example_loads_to_intended_values(name):
    interval, timeout, max_concurrent, tolerable, subset = SEED_EXPECTATIONS[name]
    config = load_config(fixture(name))
    assert (config.interval, config.timeout) == (interval, timeout)
    assert config.max_concurrent == max_concurrent
    assert config.tolerable_failure == tolerable
    assert config.storage.type == "hdfs"
    assert config.storage.max_retained == 3
    for key, value in subset.items():
        assert config.storage.plugin_config[key] == value


def test_every_seed_yaml_block_has_a_fixture():
    assert len(list(FIXTURES.glob("seed00*.yaml"))) == len(SEED_EXPECTATIONS)


def test_pasted_double_slash_comment_is_warned_as_unknown_key():
    config = load_config(fixture("seed001_hdfs_kerberos.yaml"))
    warning = [w for w in config.warnings if "//" in w]
    assert len(warning) == 1
    assert warning[0].startswith(f"{PREFIX}.storage.plugin-config.// if you used kerberos")
    assert "unknown key" in warning[0] and "comment" in warning[0]
    # ... and the keys after it are still read as intended
    assert config.storage.plugin_config["kerberosKeytab"] == "your-kerberos-keytab"


def test_stray_quote_is_warned_with_the_key():
    config = load_config(fixture("seed001_hdfs_ha.yaml"))
    key = "seatunnel.hadoop.dfs.client.failover.proxy.provider.usdp-bing"
    assert any(w.startswith(f"{PREFIX}.storage.plugin-config.{key}: value ends with a stray") for w in config.warnings)


def test_doubled_markdown_fence_is_dropped_with_a_warning_naming_the_line():
    config = load_config(fixture("seed001_s3_simple_credentials.yaml"))
    assert any("line 1: ignored a Markdown code fence" in w for w in config.warnings)
    assert config.storage.plugin_config["storage.type"] == "s3"


def test_generic_example_warns_about_placeholder_keys_and_uses_default_namespace():
    config = load_config(fixture("seed001_generic.yaml"))
    assert config.storage.namespace == DEFAULT_NAMESPACE
    assert any(w.endswith("plugin-config.K1: unknown key (ignored)") for w in config.warnings)
    assert any("using the local file system" in w for w in config.warnings)


def test_clean_documents_produce_no_warnings():
    config = load_config(fixture("seed000_localfile.yaml"))
    assert config.warnings == ()


def test_kerberos_keytab_file_path_alias_is_accepted():
    config = load_config(
        {
            "checkpoint": {
                "storage": {
                    "plugin-config": {
                        "storage.type": "hdfs",
                        "fs.defaultFS": "hdfs://nn:8020",
                        "kerberosPrincipal": "p@R",
                        "kerberosKeytabFilePath": "/k.keytab",
                    }
                }
            }
        }
    )
    assert config.storage.plugin_config["kerberosKeytabFilePath"] == "/k.keytab"
    assert not [w for w in config.warnings if "kerberos" in w]


# ------------------------------------------------------------------ forms and defaults


def test_defaults_table():
    config = load_config(None)
    assert config.interval == 10_000 and config.timeout == 60_000
    assert config.min_pause == 0 and config.max_concurrent == 1 and config.tolerable_failure == 0
    assert config.mode.value == "exactly-once"
    assert config.storage.type == "hdfs" and config.storage.max_retained == 3
    assert config.storage.namespace == DEFAULT_NAMESPACE


def test_bare_checkpoint_block_and_dict_and_text_are_equivalent():
    block = {"interval": 500, "storage": {"type": "memory"}}
    from_dict = load_config({"checkpoint": block})
    from_block = load_config(block)
    from_text = load_config("checkpoint:\n  interval: 500\n  storage:\n    type: memory\n")
    assert from_dict == from_block == from_text
    assert from_dict.interval == 500 and from_dict.storage.type == "memory"


def test_job_env_overrides_interval_and_timeout():
    config = load_config({"checkpoint": {"interval": 500, "timeout": 900}}, job_env={"checkpoint.interval": 250})
    assert (config.interval, config.timeout) == (250, 900)
    with pytest.raises(ConfigError) as err:
        load_config(None, job_env={"checkpoint.timeout": 0})
    assert err.value.key == "env.checkpoint.timeout"


def test_digit_strings_are_accepted_as_numbers():
    assert load_config({"checkpoint": {"interval": "2500"}}).interval == 2500


def test_namespace_without_trailing_slash_is_normalised_with_warning():
    config = load_config({"checkpoint": {"storage": {"type": "memory", "plugin-config": {"namespace": "/ckpt"}}}})
    assert config.storage.namespace == "/ckpt/"
    assert any("does not end with '/'" in w for w in config.warnings)


def test_localfile_type_is_a_deprecated_alias():
    config = load_config({"checkpoint": {"storage": {"type": "localfile"}}})
    assert any("deprecated" in w for w in config.warnings)


@pytest.mark.parametrize("bucket", ["my-bucket", "s3a://my-bucket", "s3://my-bucket", "s3a://my-bucket/"])
def test_s3_bucket_forms(bucket):
    config = load_config({"checkpoint": {"storage": {"plugin-config": {"storage.type": "s3", "s3.bucket": bucket}}}})
    assert config.storage.plugin_config["s3.bucket"] == bucket


# ------------------------------------------------------------------ bad input


def _error(source) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        load_config(source)
    message = str(err.value)
    assert "\n" not in message and "Traceback" not in message
    return err.value


@pytest.mark.parametrize(
    "document, key, fragment",
    [
        ({"checkpoint": {"interval": "abc"}}, "checkpoint.interval", "valid integer"),
        ({"checkpoint": {"interval": True}}, "checkpoint.interval", "valid integer"),
        ({"checkpoint": {"interval": -1}}, "checkpoint.interval", "greater than 0"),
        ({"checkpoint": {"interval": 0}}, "checkpoint.interval", "greater than 0"),
        ({"checkpoint": {"timeout": 0}}, "checkpoint.timeout", "greater than 0"),
        ({"checkpoint": {"min-pause": -3}}, "checkpoint.min-pause", "greater than or equal to 0"),
        ({"checkpoint": {"max-concurrent": 0}}, "checkpoint.max-concurrent", "greater than or equal to 1"),
        ({"checkpoint": {"tolerable-failure": -1}}, "checkpoint.tolerable-failure", "greater than or equal to 0"),
        (
            {"checkpoint": {"storage": {"max-retained": 0}}},
            "checkpoint.storage.max-retained",
            "greater than or equal to 1",
        ),
        ({"checkpoint": {"mode": "sometimes"}}, "checkpoint.mode", "exactly-once"),
        ({"checkpoint": {"storage": {"type": "ftp"}}}, "checkpoint.storage.type", "registered types: hdfs"),
        (
            {"checkpoint": {"storage": {"plugin-config": {"storage.type": "hdfs"}}}},
            "checkpoint.storage.plugin-config.fs.defaultFS",
            "required",
        ),
        (
            {"checkpoint": {"storage": {"plugin-config": {"storage.type": "nfs"}}}},
            "checkpoint.storage.plugin-config.storage.type",
            "unknown value",
        ),
        (
            {"checkpoint": {"storage": {"plugin-config": {"storage.type": "hdfs", "fs.defaultFS": "ftp://x"}}}},
            "checkpoint.storage.plugin-config.fs.defaultFS",
            "unsupported scheme",
        ),
        (
            {"checkpoint": {"storage": {"plugin-config": {"namespace": "relative/"}}}},
            "checkpoint.storage.plugin-config.namespace",
            "absolute",
        ),
        (
            {"checkpoint": {"storage": {"plugin-config": {"namespace": "/a/../b/"}}}},
            "checkpoint.storage.plugin-config.namespace",
            "..",
        ),
        ({"checkpoint": {"storage": "hdfs"}}, "checkpoint.storage", "expected a mapping"),
        (
            {"checkpoint": {"storage": {"plugin-config": ["a"]}}},
            "checkpoint.storage.plugin-config",
            "expected a mapping",
        ),
        ({"checkpoint": ["interval"]}, "checkpoint", "expected a mapping"),
        ({"seatunnel": {"engine": {"checkpoint": 5}}}, "seatunnel.engine.checkpoint", "expected a mapping"),
        ({"env": {}, "source": []}, "<dict>", "job file"),
        ({"something": 1}, "<dict>", "no 'seatunnel.engine.checkpoint'"),
    ],
)
def test_bad_input_names_key_and_problem(document, key, fragment):
    err = _error(document)
    assert err.key == key
    assert fragment in err.problem


def test_missing_object_store_buckets_are_errors():
    err = _error({"checkpoint": {"storage": {"plugin-config": {"storage.type": "s3"}}}})
    assert err.key.endswith("plugin-config.s3.bucket")
    err = _error({"checkpoint": {"storage": {"plugin-config": {"storage.type": "oss", "fs.oss.endpoint": "x"}}}})
    assert err.key.endswith("plugin-config.oss.bucket")


def test_yaml_syntax_error_names_line(tmp_path):
    path = tmp_path / "seatunnel.yaml"
    path.write_text("seatunnel:\n  engine:\n    checkpoint:\n      interval: [1, 2\n")
    err = _error(path)
    assert err.key == str(path)
    assert "YAML syntax error at line" in err.problem


def test_duplicate_key_is_an_error_naming_line(tmp_path):
    path = tmp_path / "seatunnel.yaml"
    path.write_text("checkpoint:\n  interval: 1000\n  interval: 2000\n")
    err = _error(path)
    assert "line 3" in err.problem and "duplicate key 'interval'" in err.problem


def test_empty_and_comment_only_and_missing_files(tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert _error(empty).problem == "is empty"
    comments = tmp_path / "comments.yaml"
    comments.write_text("# nothing here\n")
    assert "empty" in _error(comments).problem
    assert _error(tmp_path / "nope.yaml").problem == "file does not exist"
    assert "directory" in _error(tmp_path).problem


def test_secret_values_never_appear_in_errors():
    err = _error(
        {
            "checkpoint": {
                "storage": {
                    "plugin-config": {
                        "storage.type": "s3",
                        "s3.bucket": "http://bad bucket",
                        "fs.s3a.secret.key": "TOPSECRET",
                    }
                }
            }
        }
    )
    assert "TOPSECRET" not in str(err)


# ------------------------------------------------------------------ masking


def test_mask_secrets_masks_credentials_but_not_provider_class_names():
    masked = mask_secrets(
        {
            "fs.s3a.secret.key": "s",
            "fs.oss.accessKeySecret": "s",
            "password": "p",
            "fs.s3a.session.token": "t",
            "fs.s3a.aws.credentials.provider": "org.Simple",
            "fs.s3a.access.key": "AKIA",
            "nested": {"db.password": "p"},
        }
    )
    assert masked["fs.s3a.secret.key"] == masked["fs.oss.accessKeySecret"] == masked["password"] == "***"
    assert masked["fs.s3a.session.token"] == "***" and masked["nested"]["db.password"] == "***"
    assert masked["fs.s3a.aws.credentials.provider"] == "org.Simple"


def test_masked_config_hides_seed_secrets():
    config = load_config(fixture("seed000_oss.yaml"))
    dumped = str(config.masked())
    assert "your-secret-key" not in dumped and "***" in dumped


# ------------------------------------------------------------------ property-based

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.sampled_from(["hdfs", "memory", "s3", "oss", "local", "file:///", "/x/"]),
)
keys = st.sampled_from(
    [
        "interval",
        "timeout",
        "min-pause",
        "max-concurrent",
        "tolerable-failure",
        "mode",
        "storage",
        "type",
        "max-retained",
        "plugin-config",
        "namespace",
        "storage.type",
        "fs.defaultFS",
        "s3.bucket",
        "oss.bucket",
        "seatunnel",
        "engine",
        "checkpoint",
        "// comment",
        "K1",
    ]
) | st.text(max_size=8)
documents = st.recursive(
    scalars, lambda inner: st.dictionaries(keys, inner, max_size=6) | st.lists(inner, max_size=3), max_leaves=25
)


@settings(max_examples=400, deadline=None)
@given(documents)
def test_random_documents_give_a_config_or_a_config_error(document):
    try:
        result = load_config(document if isinstance(document, dict) else {"checkpoint": document})
    except ConfigError as err:
        assert str(err) and "\n" not in str(err)
    else:
        assert isinstance(result, CheckpointConfig)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_random_yaml_text_gives_a_config_or_a_config_error(text):
    try:
        load_config(text + "\n")
    except ConfigError as err:
        assert "\n" not in str(err)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(keys, documents, max_size=5))
def test_random_yaml_files_round_trip_through_text(document):
    text = yaml.safe_dump({"seatunnel": {"engine": {"checkpoint": document}}})
    try:
        load_config(text)
    except ConfigError as err:
        assert "\n" not in str(err)
