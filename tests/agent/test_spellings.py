"""One host, many spellings (issue 22, finding 6): the agent's URL check and the egress rule a job's
gate applies read every spelling of a name or an address as the one it means (``config.hosts``,
``config.networks``), so a list entry or a closed network cannot be walked around by respelling."""

from __future__ import annotations

import ipaddress

import pytest

from cdp.egress import NetworkPolicy
from config import ConfigError, load_settings
from workers.agent import UrlPolicy
from workers.agent.firewall import JobEgress
from workers.jobs.model.spec import JobSpec

DENIED = ["evil.example", "127.0.0.1", "bücher.example", "xn--mnchen-3ya.example"]
REFUSED = "domain not allowed: "  # then which list refused and what opens it (UrlPolicy.host_refusal)


def refused(reason: str | None) -> bool:
    return reason is not None and reason.startswith(REFUSED)

# (host as a URL or CONNECT line spells it, what it is)
DENIED_SPELLINGS = [
    ("EVIL.example.", "trailing dot and case"),
    ("evil.example..", "two trailing dots"),
    ("api.EVIL.example.", "a subdomain, trailing dot"),
    ("evil%2Eexample", "a percent-escaped dot"),
    ("xn--bcher-kva.example", "punycode of a unicode entry"),
    ("XN--BCHER-KVA.example.", "punycode, upper case, trailing dot"),
    ("münchen.example", "unicode of a punycode entry"),
    ("MÜNCHEN.example.", "unicode, upper case, trailing dot"),
    ("2130706433", "127.0.0.1 as one decimal number"),
    ("0x7f.0.0.1", "a hex part"),
    ("0177.0.0.01", "octal parts"),
    ("127.1", "two parts"),
    ("127.0.0.1.", "an address with a trailing dot"),
    ("[::ffff:127.0.0.1]", "IPv4-mapped"),
    ("[::ffff:7f00:1]", "IPv4-mapped, hex"),
    ("[64:ff9b::7f00:1]", "NAT64"),
]

# (address, the kind of network it is judged to be in)
CLOSED_ADDRESSES = [
    ("64:ff9b::a9fe:a9fe", "link-local"),  # NAT64, well-known prefix: 169.254.169.254
    ("64:ff9b::7f00:1", "loopback"),
    ("64:ff9b:1::a9fe:a9fe", "link-local"),  # NAT64, local-use prefix
    ("64:ff9b:1::808:808", "local-use NAT64"),  # closed even around a public address
    ("::ffff:0:a9fe:a9fe", "link-local"),  # SIIT
    ("::ffff:0:a00:1", "private"),
    ("::a9fe:a9fe", "link-local"),  # IPv4-compatible
    ("::808:808", "IPv4-compatible"),  # closed even around a public address
    ("2002:a9fe:a9fe::1", "link-local"),  # 6to4
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"),  # Teredo, client 127.0.0.1
    ("2001:0:4136:e378:8000:63bf:56fe:56fe", "Teredo"),  # Teredo, public client: closed as Teredo
    ("fec0::1", "site-local"),
]
PUBLIC_ADDRESSES = ["64:ff9b::808:808", "::ffff:0:808:808", "2002:808:808::1", "::ffff:8.8.8.8", "8.8.8.8",
                    "2606:4700::1111"]


@pytest.mark.parametrize(("host", "what"), DENIED_SPELLINGS)
def test_the_agents_url_check_reads_every_spelling_of_a_denied_host(host: str, what: str) -> None:
    policy = UrlPolicy.build(job_denied=DENIED)
    assert refused(policy.refusal(f"http://{host}/secret")), what
    assert refused(policy.refusal(f"https://{host}:8443/secret")), what


@pytest.mark.parametrize(("host", "what"), DENIED_SPELLINGS)
def test_the_settings_deny_list_reads_every_spelling_too(host: str, what: str) -> None:
    """BROWSERD_DENIED_DOMAINS, spelled however the operator wrote it."""
    settings = load_settings(denied_domains="EVIL.Example.,2130706433,xn--BCHER-kva.example,MÜNCHEN.example.")
    assert settings.denied_domains == ["evil.example", "127.0.0.1", "xn--bcher-kva.example", "xn--mnchen-3ya.example"]
    assert refused(UrlPolicy.build(global_denied=settings.denied_domains).refusal(f"http://{host}/")), what


@pytest.mark.parametrize(("host", "what"), DENIED_SPELLINGS)
def test_the_egress_rule_reads_every_spelling_of_a_denied_host(host: str, what: str) -> None:
    rule = JobEgress(UrlPolicy.build(job_denied=DENIED), NetworkPolicy())
    assert refused(rule.host_refusal(host.strip("[]"), 443)), what


def test_an_allow_list_entry_in_any_spelling_allows_the_host_in_any_other() -> None:
    policy = UrlPolicy.build(job_allowed=["Shop.Example.", "bücher.example", "[::ffff:10.1.2.3]"])
    for url in ("https://shop.example/", "https://WWW.shop.example./", "http://xn--bcher-kva.example/",
                "http://BÜCHER.example./", "http://10.1.2.3/", "http://167838211/"):
        assert policy.refusal(url) is None, url
    for url in ("https://shop.example.evil/", "https://evilshop.example/", "http://10.1.2.4/"):
        assert refused(policy.refusal(url)), url


def test_a_port_entry_matches_the_scheme_default_port_and_any_spelling() -> None:
    policy = UrlPolicy.build(global_denied=["example.com:443", "[::1]:8080"])
    assert refused(policy.refusal("https://EXAMPLE.com./"))
    assert policy.refusal("http://example.com/") is None
    assert refused(policy.refusal("http://[0:0::1]:8080/"))


def test_a_jobs_lists_are_stored_in_one_spelling_and_bad_entries_refused() -> None:
    spec = JobSpec(task="x", allowed_domains=["*.Shop.Example.", "bücher.example", "0x7f.1:8080"],
                   denied_domains=["EVIL.example."])
    assert spec.allowed_domains == ["shop.example", "xn--bcher-kva.example", "127.0.0.1:8080"]
    assert spec.denied_domains == ["evil.example"]
    for bad in ("https://evil.example/", "evil example", "", "a*b.example", "[nope]"):
        with pytest.raises(ValueError, match="not a domain name"):
            JobSpec(task="x", denied_domains=[bad])
    with pytest.raises(ConfigError, match="BROWSERD_DENIED_DOMAINS"):
        load_settings(denied_domains="https://evil.example/")


@pytest.mark.parametrize(("address", "kind"), CLOSED_ADDRESSES)
def test_the_egress_rule_judges_an_embedded_ipv4_address_as_itself(address: str, kind: str) -> None:
    rule = JobEgress(UrlPolicy.build(), NetworkPolicy())
    refusal = rule.address_refusal(ipaddress.ip_address(address))
    assert refusal is not None and kind in refusal


@pytest.mark.parametrize("address", PUBLIC_ADDRESSES)
def test_the_egress_rule_lets_public_addresses_through_in_any_wrapping(address: str) -> None:
    assert JobEgress(UrlPolicy.build(), NetworkPolicy()).address_refusal(ipaddress.ip_address(address)) is None


def test_an_opened_network_opens_its_addresses_wrapped_only_where_the_wrapping_is_that_address() -> None:
    """A job that opens 127.0.0.1/32 reaches it as ::ffff:127.0.0.1 or through NAT64, not as the
    deprecated IPv4-compatible ::127.0.0.1 (closed in its own right)."""
    rule = JobEgress(UrlPolicy.build(), NetworkPolicy.build(False, ["127.0.0.1/32"]))
    for address in ("127.0.0.1", "::ffff:127.0.0.1", "64:ff9b::7f00:1", "::ffff:0:7f00:1"):
        assert rule.address_refusal(ipaddress.ip_address(address)) is None, address
    for address in ("::7f00:1", "127.0.0.2", "64:ff9b::7f00:2"):
        assert rule.address_refusal(ipaddress.ip_address(address)) is not None, address
