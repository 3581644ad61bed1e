"""Which frame a bound secret may be typed into (``Secrets.fill`` given the frame's URL): an entry
covers its host and its subdomains, nothing else; a frame with no host is refused; an unbound
secret goes anywhere, as before. The browser half is ``test_secret_domains``."""

from __future__ import annotations

import pytest

from workers.agent.errors import SecretDomainRefused
from workers.agent.secrets import Secrets

SECRETS = Secrets({"pw": "hunter22-value", "note": "free-text-1"}, {}, {"pw": ["shop.example", "127.0.0.1:8443"]})


@pytest.mark.parametrize("url", ["https://shop.example/login", "https://www.shop.example/a?b=c",
                                 "http://SHOP.example.:8080/", "https://127.0.0.1:8443/"])
def test_a_bound_secret_is_filled_on_its_domains(url: str) -> None:
    assert SECRETS.fill("<secret>pw</secret>", "input_text", url) == "hunter22-value"


@pytest.mark.parametrize("url", ["https://evil.example/", "https://shop.example.evil.test/",
                                 "https://evilshop.example/", "https://127.0.0.1:9000/", "about:blank",
                                 "data:text/html,<input>", "", None, "http://[::1/"])
def test_a_bound_secret_is_refused_elsewhere(url: str | None) -> None:
    with pytest.raises(SecretDomainRefused, match="may be typed only on shop.example, 127.0.0.1:8443"):
        SECRETS.fill("user <secret>pw</secret>", "input_text", url)


def test_an_unbound_secret_goes_anywhere_and_bound_asks_for_the_url() -> None:
    assert SECRETS.fill("<secret>note</secret>", "input_text") == "free-text-1"
    assert not SECRETS.bound("<secret>note</secret> plain") and SECRETS.bound("a <secret>pw</secret>")
    assert SecretDomainRefused("pw", None, ["shop.example"]).fatal  # the job ends: nothing is typed
