"""A failing webhook is retried for longer than a receiver's outage (issue 25, item 2).

Celery's ``retry_backoff`` with full jitter spent 8 retries within about two minutes (9 attempts
in 72-126 s), so a receiver down for a five-minute deploy lost everything sent meanwhile. The
schedule now outlasts an hour by default (``BROWSERD_WEBHOOK_RETRY_SECONDS``, two hours), waits
at most ten minutes between attempts, and the real task follows it.
"""

from __future__ import annotations

import pytest

from config import get_settings
from tests.ops.test_request_metrics import _Receiver, receiver  # noqa: F401 (the fixture: answers in order)
from workers.jobs.webhooks import retries as schedule
from workers.jobs.webhooks.retries import MAX_INTERVAL, retry_countdown, retry_delays


def test_the_default_schedule_outlasts_an_hour_and_waits_at_most_ten_minutes() -> None:
    window = get_settings().webhook_retry_seconds
    delays = retry_delays(window)
    assert window >= 3600 and sum(delays) >= window
    assert delays[:4] == [1, 2, 4, 8] and max(delays) == MAX_INTERVAL
    for retries, delay in enumerate(delays):
        assert delay <= (retry_countdown(window, retries) or 0) <= delay * (1 + schedule.JITTER)
    assert retry_countdown(window, len(delays)) is None


def test_the_task_retries_on_the_schedule_then_gives_up(receiver: tuple[str, type[_Receiver]],  # noqa: F811
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        request: pytest.FixtureRequest) -> None:
    """The real task, run eagerly (each retry runs at once); the waits it asked for are recorded."""
    import workers.webhooks as webhooks

    monkeypatch.setenv("BROWSERD_WEBHOOK_ALLOWED_NETWORKS", "127.0.0.1/32")
    get_settings.cache_clear()
    request.addfinalizer(get_settings.cache_clear)
    asked: dict[int, float] = {}  # retry number -> the wait asked for before it
    real = webhooks.retry_countdown

    def recorded(window: float, retries: int) -> float | None:
        wait = real(window, retries)
        if wait is not None:
            asked[retries] = wait
        return wait

    monkeypatch.setattr(webhooks, "retry_countdown", recorded)
    url, handler = receiver
    handler.answers = [503] * 100  # down for the whole test: every attempt fails
    result = webhooks.deliver_webhook.apply((url, "job.finished", {}))
    assert result.failed()
    window = get_settings().webhook_retry_seconds
    assert sorted(asked) == list(range(len(retry_delays(window)))) and sum(asked.values()) >= window >= 3600
    assert 100 - len(handler.answers) == len(asked) + 1  # one attempt, then one per retry


def test_a_zero_window_gives_up_after_the_first_attempt(receiver: tuple[str, type[_Receiver]],  # noqa: F811
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       request: pytest.FixtureRequest) -> None:
    from workers.webhooks import deliver_webhook

    monkeypatch.setenv("BROWSERD_WEBHOOK_ALLOWED_NETWORKS", "127.0.0.1/32")
    monkeypatch.setenv("BROWSERD_WEBHOOK_RETRY_SECONDS", "0")
    get_settings.cache_clear()
    request.addfinalizer(get_settings.cache_clear)
    url, handler = receiver
    handler.answers = [503, 503]
    assert deliver_webhook.apply((url, "job.finished", {})).failed()
    assert handler.answers == [503], "one attempt, no retry"


def test_a_negative_window_is_refused(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    from config import ConfigError, load_settings

    monkeypatch.setenv("BROWSERD_WEBHOOK_RETRY_SECONDS", "-1")
    request.addfinalizer(get_settings.cache_clear)
    with pytest.raises((ConfigError, ValueError)):
        load_settings()
