"""URLs as browserd shows them (``config.masking``): passwords and secret query parameters masked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from config import load_settings
from config.masking import MASK, mask_url

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("url", "shown"), [
    ("redis://:pw@127.0.0.1:6379/0", f"redis://:{MASK}@127.0.0.1:6379/0"),
    ("redis://ada:pw@h:1/0?password=pw2&db=1", f"redis://ada:{MASK}@h:1/0?password={MASK}&db=1"),
    ("rediss://h:6380/0?password=p%40ss&ssl_cert_reqs=required", f"rediss://h:6380/0?password={MASK}&ssl_cert_reqs=required"),
    ("https://llm.example/v1?api-key=k1&api_key=k2&apikey=k3&deployment=gpt",
     f"https://llm.example/v1?api-key={MASK}&api_key={MASK}&apikey={MASK}&deployment=gpt"),
    ("wss://chrome.example/?token=t&access_token=a&auth=x&sig=s&Signature=S&X-Amz-Credential=c&passwd=p&pass=q&secret=z",
     f"wss://chrome.example/?token={MASK}&access_token={MASK}&auth={MASK}&sig={MASK}&Signature={MASK}"
     f"&X-Amz-Credential={MASK}&passwd={MASK}&pass={MASK}&secret={MASK}"),
    ("http://user@host/", f"http://{MASK}@host/"),
    ("http://127.0.0.1/?q=shoes&page=2", "http://127.0.0.1/?q=shoes&page=2"),
    ("https://www.google.com/search?q={query}", "https://www.google.com/search?q={query}"),
    ("not a url", "not a url"),
    ("", ""),
])
def test_passwords_and_secret_parameters_are_masked_the_rest_kept(url: str, shown: str) -> None:
    assert mask_url(url) == shown


def test_settings_mask_every_url_value_and_list_item() -> None:
    values = load_settings(redis_url="redis://127.0.0.1:1/0?password=hunter2", llm_base_url="https://llm.example/v1?api-key=sk-1",
                           cdp_urls="ws://10.0.0.5:9222/x?token=cdp-tok", api_url="http://u:api-pw@127.0.0.1:8080",
                           artifacts_url="s3://bucket/p?secret=s3-secret").masked()
    text = str(values)
    for secret in ("hunter2", "sk-1", "cdp-tok", "api-pw", "s3-secret"):
        assert secret not in text, secret
    assert values["redis_url"] == f"redis://127.0.0.1:1/0?password={MASK}"
    assert values["cdp_urls"] == [f"ws://10.0.0.5:9222/x?token={MASK}"]


@pytest.mark.e2e  # python -m daemon config
def test_browserd_config_prints_no_password_of_any_url() -> None:
    env = {"PATH": "/usr/bin:/bin", "BROWSERD_REDIS_URL": "redis://:userinfo-pw@127.0.0.1:6379/0?password=query-pw",
           "BROWSERD_LLM_BASE_URL": "https://llm.example/openai?api-key=llm-key-123"}
    for args in ([], ["--json"]):
        shown = subprocess.run([sys.executable, "-m", "daemon", "config", *args], capture_output=True, text=True,
                               env=env, cwd=ROOT, check=True).stdout
        assert "userinfo-pw" not in shown and "query-pw" not in shown and "llm-key-123" not in shown, shown
        assert "127.0.0.1:6379" in shown and "llm.example/openai" in shown
