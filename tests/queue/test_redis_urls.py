"""A Redis URL in redis-py's ``?password=`` form works for the whole deployment: the API queues, a
worker runs, and neither prints the password. (Celery's transport used to choke on the query
parameter, so every submission answered 503.)"""

from __future__ import annotations

import pytest

from config import ConfigError, Settings
from daemon.api import create_app
from tests.queue.stack import TOKEN, script, stack
from tests.support.servers import StaticServer
from workers.jobs.queue.app import kombu_url

PASSWORD = "p@ss:w/rd-1234"


@pytest.mark.e2e  # redis-server with requirepass, browserd serve, a worker
def test_a_query_password_queues_and_runs_jobs_and_is_never_printed(site: StaticServer) -> None:
    with stack(redis_password=PASSWORD, job_timeout=60) as s:
        assert "?password=" in s.env["BROWSERD_REDIS_URL"]
        worker = s.start_worker(concurrency=1)
        job = s.submit({"script": script(site.url("/cdp/basic.html"), waits=0, text="through the password")})
        done = s.wait_state(job["id"], {"succeeded", "failed", "cancelled"}, timeout=120)
        assert done["state"] == "succeeded" and done["result"]["final_answer"] == "through the password", done
        status, ready = s.call("GET", "/readyz", token=TOKEN)
        assert status == 200 and ready["workers"] == 1
        assert s.api is not None
        for log in (s.api.log(200_000), worker.log(200_000)):
            assert PASSWORD not in log and "p%40ss" not in log


@pytest.mark.parametrize(("url", "broker"), [
    ("redis://127.0.0.1:6379/0?password=p%40ss", "redis://:p%40ss@127.0.0.1:6379/0"),
    ("redis://ada:old@h:1/2?password=new&db=3&ssl_cert_reqs=none", "redis://ada:new@h:1/3?ssl_cert_reqs=none"),
    ("rediss://h/0?username=ada&password=x", "rediss://ada:x@h/0"),
    ("redis://u%40x:p%3Aw@h/0", "redis://u%40x:p%3Aw@h/0"),
    ("unix:///run/redis.sock?db=1", "unix:///run/redis.sock?db=1"),
])
def test_the_broker_reads_credentials_and_db_from_the_url_itself(url: str, broker: str) -> None:
    assert kombu_url(url) == broker


def test_a_url_the_broker_cannot_read_stops_the_api_at_start_naming_it() -> None:
    with pytest.raises(ConfigError, match="BROWSERD_REDIS_URL") as err:
        create_app(Settings(redis_url="redis://127.0.0.1:1/0?password=hunter2&socket_timeout=3"))
    assert "socket_timeout" in str(err.value) and "hunter2" not in str(err.value)
