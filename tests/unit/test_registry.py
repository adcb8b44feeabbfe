"""Plugin discovery through the `seatunnel_ckpt.storage` entry-point group."""

from __future__ import annotations

import sys
import textwrap

import pytest

from airflow_provider_seatunnel_ckpt.config import ConfigError, load_config
from airflow_provider_seatunnel_ckpt.storage import create_storage, registry, storage_types
from airflow_provider_seatunnel_ckpt.storage.fs_storage import FileSystemCheckpointStorage


@pytest.fixture
def third_party_plugin(tmp_path, monkeypatch):
    """Install a third-party distribution on sys.path: a module plus dist-info metadata
    whose entry points register storage types, as `pip install` would."""
    package = tmp_path / "acme_ckpt_plugin.py"
    package.write_text(
        textwrap.dedent("""
        from airflow_provider_seatunnel_ckpt.storage import CheckpointStorageFactory
        from airflow_provider_seatunnel_ckpt.storage.fs_storage import FileSystemCheckpointStorage
        from airflow_provider_seatunnel_ckpt.storage.fs_memory import MemoryFileSystem

        class AcmeFactory(CheckpointStorageFactory):
            identifier = "acme"
            def validate(self, plugin_config, key_prefix):
                from airflow_provider_seatunnel_ckpt.config import ConfigError
                if "acme.region" not in plugin_config:
                    raise ConfigError(f"{key_prefix}.acme.region", "required by the acme plugin")
                return []
            def create(self, plugin_config, max_retained=3):
                storage = FileSystemCheckpointStorage(MemoryFileSystem("acme"), "/acme/", max_retained, "acme")
                storage.created_with = dict(plugin_config)
                return storage

        class OtherFactory(AcmeFactory):
            pass
    """)
    )
    dist = tmp_path / "acme_ckpt_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-ckpt-plugin\nVersion: 1.0\n")
    entries = "[seatunnel_ckpt.storage]\nacme = acme_ckpt_plugin:AcmeFactory\n"
    (dist / "entry_points.txt").write_text(entries)
    monkeypatch.syspath_prepend(str(tmp_path))
    saved = dict(registry._registry), dict(registry._conflicts)
    registry.discover(force=True)
    yield dist
    registry._registry.clear()
    registry._registry.update(saved[0])
    registry._conflicts.clear()
    registry._conflicts.update(saved[1])
    sys.modules.pop("acme_ckpt_plugin", None)


def test_builtins_are_registered():
    assert {"hdfs", "localfile", "memory"} <= set(storage_types())


def test_third_party_plugin_is_selected_by_storage_type(third_party_plugin):
    assert "acme" in storage_types()
    config = load_config({"checkpoint": {"storage": {"type": "acme", "plugin-config": {"acme.region": "eu"}}}})
    storage = create_storage(config.storage)
    assert isinstance(storage, FileSystemCheckpointStorage) and storage.storage_type == "acme"
    assert storage.created_with == {"acme.region": "eu"}


def test_third_party_plugin_validates_its_own_keys(third_party_plugin):
    with pytest.raises(ConfigError) as err:
        load_config({"checkpoint": {"storage": {"type": "acme"}}})
    assert err.value.key == "checkpoint.storage.plugin-config.acme.region"


def test_unknown_type_lists_registered_types():
    with pytest.raises(ConfigError) as err:
        load_config({"checkpoint": {"storage": {"type": "nope"}}})
    assert "registered types: hdfs, localfile, memory" in err.value.problem


def test_two_plugins_with_one_identifier_is_a_clear_error(third_party_plugin):
    (third_party_plugin / "entry_points.txt").write_text(
        "[seatunnel_ckpt.storage]\nacme = acme_ckpt_plugin:AcmeFactory\nACME = acme_ckpt_plugin:OtherFactory\n"
    )
    registry.discover(force=True)
    with pytest.raises(ConfigError) as err:
        load_config({"checkpoint": {"storage": {"type": "acme", "plugin-config": {"acme.region": "eu"}}}})
    assert "registered by more than one plugin" in err.value.problem
    assert "acme_ckpt_plugin:AcmeFactory" in err.value.problem and "acme_ckpt_plugin:OtherFactory" in err.value.problem


def test_broken_plugin_fails_only_when_used(tmp_path, monkeypatch):
    registry.register_storage("broken", "no_such_module_xyz:Factory")
    try:
        assert "broken" in storage_types()
        load_config({"checkpoint": {"storage": {"type": "memory"}}})  # others unaffected
        from airflow_provider_seatunnel_ckpt.storage import CheckpointStorageError

        with pytest.raises(CheckpointStorageError, match="failed to load"):
            load_config({"checkpoint": {"storage": {"type": "broken"}}})
    finally:
        registry._registry.pop("broken", None)
