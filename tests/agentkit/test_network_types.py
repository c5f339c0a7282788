"""pydantic's network types and decimals through `@tool` and `extract`: every string the
grammar lets a model write for them is one pydantic accepts (the scheme a URL type allows, a
host, an IP address, a decimal numeral), so a typed call never fails on its URL or its price
after decoding."""

import json
import math
import random
from decimal import Decimal
from typing import Annotated

import pydantic
import pydantic.networks as networks
import pytest
from pydantic import BaseModel, Field

import grammar
from agentkit import extract, tool
from grammar import Vocabulary
from runtimes.testing import RandomRuntime

TYPES = [
    "AnyUrl", "AnyHttpUrl", "HttpUrl", "FileUrl", "FtpUrl", "AnyWebsocketUrl", "WebsocketUrl",
    "PostgresDsn", "CockroachDsn", "AmqpDsn", "RedisDsn", "MongoDsn", "KafkaDsn", "NatsDsn",
    "MySQLDsn", "MariaDBDsn", "ClickHouseDsn", "SnowflakeDsn",
    "IPvAnyAddress", "IPvAnyInterface", "IPvAnyNetwork",
]
# Every ASCII byte alone, and a few runs, so a walk writes long hosts and paths quickly.
VOCAB = Vocabulary.from_tokens(
    [b""] + [bytes([b]) for b in range(1, 128)] + [b"a" * 16, b"%2F", b"://", b"example.com", b"@", b"::"],
    eos_ids=[0],
)
WALKS = 60


def _walk_text(compiled: grammar.CompiledGrammar, rng: random.Random) -> str:
    """A random matcher walk, steered to its shortest completion after a random number of steps."""
    m = grammar.Matcher(compiled)
    taken = []
    random_steps = rng.choice([5, 30, 120])
    for step in range(4000):
        allowed = m.next_token_mask().allowed_ids()
        token = int(allowed[rng.randrange(allowed.size)]) if step < random_steps else m.shortest_completion_token()
        assert m.accept_token(token)
        taken.append(token)
        if m.is_terminated():
            return VOCAB.decode([t for t in taken if t != 0])
    raise AssertionError("the walk did not finish")


def _walks(tp: object, seed: str) -> list[str]:
    """`WALKS` random documents of the grammar a tool parameter of type `tp` is held to."""

    @tool
    def use(value: tp) -> str:  # type: ignore[valid-type]
        """Use a value."""
        return str(value)

    compiled = grammar.compile(grammar.from_json_schema(use.schema["properties"]["value"]), VOCAB)
    rng = random.Random(seed)
    return [_walk_text(compiled, rng) for _ in range(WALKS)]


@pytest.mark.parametrize("name", TYPES)
def test_every_value_the_grammar_allows_validates(name):
    tp = getattr(networks, name)
    adapter = pydantic.TypeAdapter(tp)
    for text in _walks(tp, name):
        adapter.validate_python(json.loads(text))  # raises where the grammar let through what pydantic refuses


DECIMALS = {
    "free": Decimal, "optional": Decimal | None, "ge0": Annotated[Decimal, Field(ge=0)],
    "gt0": Annotated[Decimal, Field(gt=0)], "ge1": Annotated[Decimal, Field(ge=1)],
    "le5": Annotated[Decimal, Field(le=5)], "between": Annotated[Decimal, Field(ge=0, lt=100)],
}


@pytest.mark.parametrize("name", DECIMALS)
def test_every_decimal_the_grammar_allows_validates(name):
    adapter = pydantic.TypeAdapter(DECIMALS[name])
    for text in _walks(DECIMALS[name], name):
        value = json.loads(text)
        if isinstance(value, float) and not math.isfinite(value):
            continue  # a number past a float's range (1e999): docs/limits.md, "Decimals"
        adapter.validate_json(text)  # as an output is read


def test_a_decimal_is_a_numeral_not_any_string():
    @tool
    def order(unit_price: Decimal, discount: Annotated[Decimal, Field(ge=0)]) -> str:
        """Order a thing."""
        return ""

    g = grammar.from_json_schema(order.schema)
    for price in (12.5, "12.50", "-3", ".5"):
        assert g.accepts(_compact({"unit_price": price, "discount": "0.25"})), price
    for price in ("£12.50", "12,50", "twelve", "", "NaN"):
        assert not g.accepts(_compact({"unit_price": price, "discount": 1})), price
    assert not g.accepts(_compact({"unit_price": 1, "discount": "-0.25"}))


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def test_everyday_values_are_still_allowed():
    @tool
    def connect(url: networks.HttpUrl, db: networks.PostgresDsn, ip: networks.IPvAnyAddress) -> str:
        """Connect."""
        return ""

    g = grammar.from_json_schema(connect.schema)
    for url, db, ip in [
        ("https://docs.example.org/products/electronics?id=5&q=a%20b#top", "postgres://ann:pw@db.example.com:5432/shop",
         "192.168.0.1"),
        ("http://user@host.example:8080/a/b/c.html", "postgresql+asyncpg://localhost/app", "::1"),
        ("http://127.0.0.1:8000/x", "postgres://10.0.0.2/db", "2001:db8::8a2e:370:7334"),
    ]:
        assert g.accepts(_compact({"url": url, "db": db, "ip": ip})), (url, db, ip)
    for url in ("ftp://example.com", "http:example.com", "http://", "https://example.123"):
        assert not g.accepts(_compact({"url": url, "db": "postgres://h/d", "ip": "::1"})), url


class Site(BaseModel):
    url: networks.HttpUrl
    db: networks.PostgresDsn
    ip: networks.IPvAnyAddress


@pytest.mark.parametrize("seed", range(5))
def test_extract_of_network_types_validates_without_a_retry(seed):
    site = extract(Site, "The site is https://example.com.", runtime=RandomRuntime(seed=seed), max_retries=0)
    assert isinstance(site, Site)
