import pytest

from jobs.config import ConfigError, load_settings

pytestmark = pytest.mark.unit


def test_local_is_the_default_and_paths_are_absolute(monkeypatch):
    monkeypatch.delenv("EO_ENV", raising=False)
    settings = load_settings()
    assert settings.env == "local"
    assert settings.table_path("silver").endswith("/data/lake/silver/events")
    assert settings.table_path("silver", "rebuild").endswith("/data/lake/_rebuild/silver/events")
    assert settings.lake_root.startswith("/")


def test_one_switch_selects_the_environment_and_variables_override_keys(monkeypatch):
    monkeypatch.setenv("EO_ENV", "local-s3")
    monkeypatch.setenv("EO_KAFKA_BOOTSTRAP", "127.0.0.1:29092")
    settings = load_settings()
    assert settings.table_path("bronze").startswith("s3a://")
    assert settings.kafka_bootstrap == "127.0.0.1:29092"


def test_unknown_names_fail_clearly(monkeypatch):
    monkeypatch.setenv("EO_ENV", "staging-typo")
    with pytest.raises(ConfigError, match="unknown environment 'staging-typo'"):
        load_settings()
    monkeypatch.delenv("EO_ENV")
    with pytest.raises(ConfigError, match="unknown table"):
        load_settings().table_path("golden")
    with pytest.raises(ConfigError, match="unknown namespace"):
        load_settings().table_path("silver", "scratch")
