"""Dollars per LLM call: a price table per model, and what one call cost.

Prices are USD per million tokens: ``input``, ``cached_input`` and ``output`` (screenshots are
input tokens, ``StepRecord.image_tokens`` being their estimated share, so they cost the input
price). ``DEFAULT_PRICES`` holds public list prices of common models; ``BROWSERD_LLM_PRICES`` (JSON,
``{"model": {"input": 2.5, "output": 10}}``) adds models or replaces their prices. A model is
found by its exact name, else by the longest name in the table it starts with
(``gpt-4o-mini-2024-07-18`` is ``gpt-4o-mini``); a model found neither way is *unpriced*: its calls
count no dollars, and a job that used it says so (``JobResult.unpriced_models``) rather than
showing a cost that leaves it out silently. Pure: the API, workers and the client may read it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from config import ConfigError, Settings

PER_TOKENS = 1_000_000


class ModelPrice(BaseModel):
    """USD per million tokens of one model."""

    model_config = ConfigDict(extra="forbid")

    input: float = Field(ge=0)
    cached_input: float | None = Field(None, ge=0, description="Null: the input price.")
    output: float = Field(ge=0)

    def cost(self, input_tokens: int, output_tokens: int, cached_tokens: int = 0) -> float:
        cached = min(cached_tokens, input_tokens)
        cached_price = self.input if self.cached_input is None else self.cached_input
        return ((input_tokens - cached) * self.input + cached * cached_price + output_tokens * self.output) / PER_TOKENS


def _p(input: float, cached: float, output: float) -> ModelPrice:  # noqa: A002
    return ModelPrice(input=input, cached_input=cached, output=output)


# Public list prices (USD per million tokens) when this table was written; set BROWSERD_LLM_PRICES
# for your contract's, or for a model missing here.
DEFAULT_PRICES: dict[str, ModelPrice] = {
    "gpt-4o": _p(2.50, 1.25, 10.00),
    "gpt-4o-mini": _p(0.15, 0.075, 0.60),
    "gpt-4.1": _p(2.00, 0.50, 8.00),
    "gpt-4.1-mini": _p(0.40, 0.10, 1.60),
    "gpt-4.1-nano": _p(0.10, 0.025, 0.40),
    "o3": _p(2.00, 0.50, 8.00),
    "o4-mini": _p(1.10, 0.275, 4.40),
    "claude-3-5-sonnet": _p(3.00, 0.30, 15.00),
    "claude-3-7-sonnet": _p(3.00, 0.30, 15.00),
    "claude-sonnet-4": _p(3.00, 0.30, 15.00),
    "claude-3-5-haiku": _p(0.80, 0.08, 4.00),
    "gemini-2.0-flash": _p(0.10, 0.025, 0.40),
    "gemini-2.5-flash": _p(0.30, 0.075, 2.50),
    "gemini-2.5-pro": _p(1.25, 0.31, 10.00),
}

_TABLE = TypeAdapter(dict[str, ModelPrice])


class PriceTable:
    """Prices by model name: the defaults with the operator's over them."""

    def __init__(self, prices: Mapping[str, ModelPrice]) -> None:
        self.prices = dict(prices)
        self._by_length = sorted(self.prices, key=len, reverse=True)

    @classmethod
    def from_settings(cls, settings: Settings) -> PriceTable:
        """``DEFAULT_PRICES`` with ``BROWSERD_LLM_PRICES`` over them; a bad table is a ``ConfigError``."""
        return cls({**DEFAULT_PRICES, **parse_prices(settings.llm_prices)})

    def price(self, model: str) -> ModelPrice | None:
        """The model's price; None: unpriced."""
        name = model.split("/")[-1]  # a provider prefix (openrouter's "openai/gpt-4o") names the same model
        found = self.prices.get(name)
        if found is not None:
            return found
        return next((self.prices[k] for k in self._by_length if name.startswith(k)), None)

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float | None:
        """What one call cost in USD; None: the model is unpriced."""
        price = self.price(model)
        return None if price is None else price.cost(input_tokens, output_tokens)


def parse_prices(raw: str | None) -> dict[str, ModelPrice]:
    """``BROWSERD_LLM_PRICES``: a JSON object, model -> {input, cached_input, output} (USD per million)."""
    if not raw:
        return {}
    try:
        return _TABLE.validate_python(json.loads(raw))
    except (ValueError, ValidationError) as exc:
        raise ConfigError(f"BROWSERD_LLM_PRICES: not a price table ({exc}); write it as "
                          '{"model": {"input": 2.5, "cached_input": 1.25, "output": 10}}, USD per million tokens') from None
