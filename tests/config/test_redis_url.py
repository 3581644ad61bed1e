"""``BROWSERD_REDIS_URL`` in its Sentinel form (kombu's, issue 26): read once, given to the store, the
broker and RedBeat alike, its passwords masked wherever it is shown, and a bad one refused by name."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from config import ConfigError, Settings, load_settings
from config.masking import MASK, mask_url
from config.redis_url import RedisKind, parse_redis_url
from workers.jobs.queue.app import celery_config, kombu_url

URL = "sentinel://:m%40ster-pw@10.0.0.1:26379;sentinel://10.0.0.2;sentinel://10.0.0.3:26380/2?master_name=prod"


def test_the_sentinel_form_names_every_sentinel_the_master_and_its_credentials() -> None:
    target = parse_redis_url(URL)
    assert target.kind is RedisKind.SENTINEL and target.sentinels is not None
    found = target.sentinels
    assert found.hosts == (("10.0.0.1", 26379), ("10.0.0.2", 26379), ("10.0.0.3", 26380))
    assert (found.master_name, found.db, found.password, found.sentinel_password) == ("prod", 2, "m@ster-pw", None)
    with_own = parse_redis_url("sentinel://h:1?master_name=m&sentinel_password=s3cret").sentinels
    assert with_own is not None and with_own.sentinel_password == "s3cret" and with_own.password is None


@pytest.mark.parametrize("url", ["redis://127.0.0.1:6390/0", "rediss://h:1/0", "unix:///run/redis.sock"])
def test_a_single_server_url_is_unchanged(url: str) -> None:
    assert parse_redis_url(url).kind is RedisKind.SERVER and parse_redis_url(url).url == url


@pytest.mark.parametrize(("url", "says"), [
    ("sentinel://h1:26379;sentinel://h2:26379", "master_name"),
    ("sentinel://h1:26379?master_name=m&socket_timeout=1", "socket_timeout"),
    ("sentinel://h1:26379;redis://h2:6379?master_name=m", "sentinel 2"),
    ("sentinel://h1:26379/zero?master_name=m", "database"),
    ("http://h1:26379", "sentinel://"),
])
def test_a_bad_url_is_refused_at_start_saying_what_is_wrong(url: str, says: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Settings(_env_file=None, redis_url=url)
    assert says in str(caught.value)


def test_a_refused_url_never_shows_its_password() -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(_env_file=None, redis_url="sentinel://:hunter2@h1;sentinel://:hunter2@h2")
    assert "hunter2" not in str(caught.value) and "master_name" in str(caught.value), caught.value


def test_every_password_of_a_sentinel_url_is_masked() -> None:
    masked = mask_url("sentinel://:pw1@h1:26379;sentinel://u:pw2@h2:26379/0?master_name=m&sentinel_password=pw3")
    assert "pw1" not in masked and "pw2" not in masked and "pw3" not in masked
    assert masked == (f"sentinel://:{MASK}@h1:26379;sentinel://u:{MASK}@h2:26379/0"
                      f"?master_name=m&sentinel_password={MASK}")


def test_the_broker_and_redbeat_get_the_same_sentinels_and_master() -> None:
    settings = Settings(_env_file=None, redis_url=URL + "&sentinel_password=s3cret")
    conf = celery_config(settings)
    assert conf["broker_url"] == kombu_url(settings.redis_url) == (
        "sentinel://:m%40ster-pw@10.0.0.1:26379/2;sentinel://:m%40ster-pw@10.0.0.2:26379/2;"
        "sentinel://:m%40ster-pw@10.0.0.3:26380/2")
    options = conf["broker_transport_options"]
    assert options["master_name"] == "prod" and options["sentinel_kwargs"] == {"password": "s3cret"}
    assert conf["redbeat_redis_url"].startswith("redis-sentinel://")
    beat = conf["redbeat_redis_options"]
    assert beat["sentinels"] == [["10.0.0.1", 26379], ["10.0.0.2", 26379], ["10.0.0.3", 26380]]
    assert (beat["service_name"], beat["db"], beat["password"]) == ("prod", 2, "m@ster-pw")
    assert beat["sentinel_kwargs"] == {"password": "s3cret"}


def test_a_single_server_keeps_its_broker_and_redbeat_settings() -> None:
    conf = celery_config(Settings(_env_file=None, redis_url="redis://127.0.0.1:6390/1"))
    assert conf["broker_url"] == conf["redbeat_redis_url"] == "redis://127.0.0.1:6390/1"
    assert "master_name" not in conf["broker_transport_options"] and "redbeat_redis_options" not in conf
