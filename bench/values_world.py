"""Tools as users write them, and requests whose right answers come only from those tools, for
`bench.agent_values`.

The tools are plain `@tool` functions over fixed made-up tables (Oslo is at 7.5 °C and has
139,875 people; order K-4410 totals 84.2), so a model cannot answer from memory. Their
docstrings give example values the way people write them (`for example "pen"`, `"A-1"`,
`1001`); none of those examples is a key of any table, so a call that copies one shows as a
wrong call.

Each request is one of three kinds: `one-step` (one call answers it), `two-step` (a call whose
argument comes from another call's result: the weather in Fahrenheit needs the weather
first) and `no-tool` (no tool fits: the agent should answer or decline without a call). Each
names its expected answer (a number or a word; None for `no-tool`) and the calls it needs
with the arguments that matter. The split into a `tune` half and a `measure` half was fixed
with the data, before any tuning, balanced by kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Literal

from agentkit import Tool, tool

WEATHER = {
    "Oslo": (7.5, "drizzle"), "Lima": (18.2, "overcast"), "Perth": (24.6, "sunny"), "Quito": (13.4, "fog"),
    "Graz": (-2.5, "snow"), "Cork": (10.8, "windy"), "Austin": (31.5, "thunderstorms"),
}
POPULATIONS = {
    "Oslo": 139_875, "Lima": 412_306, "Perth": 88_412, "Quito": 1_204_557, "Graz": 291_072, "Cork": 56_930,
    "Austin": 733_118,
}
PRICES_USD = {
    "notebook": 4.35, "stapler": 12.8, "desk lamp": 31.9, "backpack": 47.25, "mouse pad": 8.65, "kettle": 26.4,
    "umbrella": 15.75,
}
IN_STOCK = {
    "notebook": 412, "stapler": 37, "desk lamp": 9, "backpack": 58, "mouse pad": 265, "kettle": 23, "umbrella": 144,
}
ORDERS = {
    "K-4410": {"status": "shipped", "items": 3, "total_usd": 84.2, "placed": "2024-02-27"},
    "K-4582": {"status": "delayed", "items": 1, "total_usd": 19.99, "placed": "2024-03-18"},
    "M-0917": {"status": "delivered", "items": 5, "total_usd": 142.5, "placed": "2024-01-09"},
    "M-1033": {"status": "processing", "items": 2, "total_usd": 61.08, "placed": "2024-04-22"},
}
RATES = {
    ("USD", "EUR"): 0.9137, ("EUR", "USD"): 1.0944, ("USD", "JPY"): 151.62, ("GBP", "USD"): 1.2713,
    ("EUR", "GBP"): 0.8581, ("USD", "CAD"): 1.3642,
}
EMPLOYEES = {
    3071: {"name": "Priya Nandakumar", "department": "Logistics", "office": "Graz", "start_date": "2019-08-12"},
    3124: {"name": "Jonas Eberle", "department": "Finance", "office": "Cork", "start_date": "2021-02-01"},
    3388: {"name": "Ama Mensah", "department": "Research", "office": "Quito", "start_date": "2016-11-23"},
    3502: {"name": "Luis Ortega", "department": "Sales", "office": "Austin", "start_date": "2023-06-05"},
}
METRES_PER = {"km": 1000.0, "m": 1.0, "mi": 1609.344, "ft": 0.3048}


@tool
def get_weather(city: str) -> dict:
    """Get the current weather in a city.

    Args:
        city: The city's name, for example "Paris".
    """
    key = city.strip().title()
    if key not in WEATHER:
        raise ValueError(f"no weather for {city!r}")
    celsius, sky = WEATHER[key]
    return {"city": key, "temperature_celsius": celsius, "sky": sky}


@tool
def convert_temperature(celsius: float, to: Literal["fahrenheit", "kelvin"]) -> float:
    """Convert a temperature from degrees Celsius.

    Args:
        celsius: The temperature in degrees Celsius, for example 25.
        to: The unit to convert to.
    """
    return round(celsius * 9 / 5 + 32 if to == "fahrenheit" else celsius + 273.15, 2)


@tool
def get_price(product: str) -> float:
    """Get the price of a product in US dollars.

    Args:
        product: The product's name, for example "pen".
    """
    key = product.strip().lower()
    if key not in PRICES_USD:
        raise ValueError(f"unknown product {product!r}")
    return PRICES_USD[key]


@tool
def count_in_stock(product: str) -> int:
    """Get how many units of a product are in stock.

    Args:
        product: The product's name, for example "pen".
    """
    key = product.strip().lower()
    if key not in IN_STOCK:
        raise ValueError(f"unknown product {product!r}")
    return IN_STOCK[key]


@tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first number, for example 2.
        b: The second number, for example 3.
    """
    return round(a * b, 6)


@tool
def lookup_order(order_id: str) -> dict:
    """Look up an order's status, number of items, total and date placed.

    Args:
        order_id: The order's id, for example "A-1".
    """
    key = order_id.strip().upper()
    if key not in ORDERS:
        raise ValueError(f"no order {order_id!r}")
    return {"order_id": key, **ORDERS[key]}


@tool
def get_population(city: str) -> int:
    """Get the number of people living in a city.

    Args:
        city: The city's name, for example "Paris".
    """
    key = city.strip().title()
    if key not in POPULATIONS:
        raise ValueError(f"no population for {city!r}")
    return POPULATIONS[key]


@tool
def exchange_rate(from_currency: str, to_currency: str) -> float:
    """Get how many units of one currency one unit of another buys.

    Args:
        from_currency: ISO code of the currency converted from, for example "CHF".
        to_currency: ISO code of the currency converted to, for example "SEK".
    """
    key = (from_currency.strip().upper(), to_currency.strip().upper())
    if key not in RATES:
        raise ValueError(f"no rate from {from_currency!r} to {to_currency!r}")
    return RATES[key]


@tool
def days_between(start: str, end: str) -> int:
    """Count the days from one date to another.

    Args:
        start: The first date as YYYY-MM-DD, for example "2024-01-31".
        end: The second date as YYYY-MM-DD.
    """
    return (date.fromisoformat(end.strip()) - date.fromisoformat(start.strip())).days


@tool
def get_employee(employee_id: int) -> dict:
    """Look up an employee's record: name, department, office city and start date.

    Args:
        employee_id: The employee's number, for example 1001.
    """
    if employee_id not in EMPLOYEES:
        raise ValueError(f"no employee {employee_id}")
    return {"employee_id": employee_id, **EMPLOYEES[employee_id]}


@tool
def convert_length(value: float, from_unit: Literal["km", "m", "mi", "ft"], to_unit: Literal["km", "m", "mi", "ft"]) -> float:
    """Convert a length from one unit to another.

    Args:
        value: The length, for example 10.
        from_unit: The unit of the value.
        to_unit: The unit to convert to.
    """
    return round(value * METRES_PER[from_unit] / METRES_PER[to_unit], 3)


TOOLS: tuple[Tool, ...] = (
    get_weather, convert_temperature, get_price, count_in_stock, multiply, lookup_order, get_population,
    exchange_rate, days_between, get_employee, convert_length,
)

COMMUTATIVE = frozenset({"multiply"})
"""Tools whose arguments may come in either order: `multiply(12, 4.35)` is `multiply(4.35, 12)`."""

Kind = Literal["one-step", "two-step", "no-tool"]
Split = Literal["tune", "measure"]
KINDS: tuple[Kind, ...] = ("one-step", "two-step", "no-tool")
Call = tuple[str, dict[str, object]]
"""A tool's name and the arguments that matter (others the model may give any value)."""


@dataclass(frozen=True)
class Request:
    """A user's request, its expected answer (a number, a word, or None where no tool fits) and
    the calls a right run makes, in order (a later call's arguments come from earlier results)."""

    id: str
    kind: Kind
    split: Split
    text: str
    answer: float | str | None
    calls: tuple[Call, ...] = ()


def _c(name: str, /, **arguments: object) -> Call:
    return (name, arguments)


def _one(id: str, split: Split, text: str, answer: float | str, call: Call) -> Request:
    return Request(id, "one-step", split, text, answer, (call,))


def _two(id: str, split: Split, text: str, answer: float | str, first: Call, second: Call) -> Request:
    return Request(id, "two-step", split, text, answer, (first, second))


def _none(id: str, split: Split, text: str) -> Request:
    return Request(id, "no-tool", split, text, None)


REQUESTS: tuple[Request, ...] = (
    # one-step: 10 tune, 10 measure
    _one("temp_oslo", "tune", "What is the temperature in Oslo right now?", 7.5, _c("get_weather", city="Oslo")),
    _one("temp_lima", "measure", "How warm is it in Lima at the moment, in Celsius?", 18.2,
         _c("get_weather", city="Lima")),
    _one("sky_graz", "tune", "What is the sky like in Graz today?", "snow", _c("get_weather", city="Graz")),
    _one("sky_cork", "measure", "What is the weather like in Cork right now?", "windy", _c("get_weather", city="Cork")),
    _one("c_to_f", "tune", "Convert 21.4 degrees Celsius to Fahrenheit.", 70.52,
         _c("convert_temperature", celsius=21.4, to="fahrenheit")),
    _one("c_to_k", "measure", "What is -40.7 °C in kelvin?", 232.45,
         _c("convert_temperature", celsius=-40.7, to="kelvin")),
    _one("price_backpack", "tune", "How much does a backpack cost?", 47.25, _c("get_price", product="backpack")),
    _one("price_kettle", "measure", "What is the price of the kettle?", 26.4, _c("get_price", product="kettle")),
    _one("times_decimal", "tune", "What is 37.5 times 48.2?", 1807.5, _c("multiply", a=37.5, b=48.2)),
    _one("times_thousands", "measure", "Multiply 1,284 by 0.35.", 449.4, _c("multiply", a=1284, b=0.35)),
    _one("status_k4410", "tune", "What is the status of order K-4410?", "shipped", _c("lookup_order", order_id="K-4410")),
    _one("status_m1033", "measure", "Has order M-1033 shipped yet? Tell me its status.", "processing",
         _c("lookup_order", order_id="M-1033")),
    _one("people_perth", "tune", "How many people live in Perth?", 88_412, _c("get_population", city="Perth")),
    _one("people_quito", "measure", "What is the population of Quito?", 1_204_557, _c("get_population", city="Quito")),
    _one("rate_usd_jpy", "tune", "What is the exchange rate from USD to JPY?", 151.62,
         _c("exchange_rate", from_currency="USD", to_currency="JPY")),
    _one("rate_eur_gbp", "measure", "How many British pounds (GBP) does one euro (EUR) buy?", 0.8581,
         _c("exchange_rate", from_currency="EUR", to_currency="GBP")),
    _one("days_2024", "tune", "How many days are there between 2024-02-11 and 2024-09-03?", 205,
         _c("days_between", start="2024-02-11", end="2024-09-03")),
    _one("dept_3124", "measure", "Which department does employee 3124 work in?", "Finance",
         _c("get_employee", employee_id=3124)),
    _one("miles_to_km", "tune", "Convert 26.2 miles to kilometres.", 42.165,
         _c("convert_length", value=26.2, from_unit="mi", to_unit="km")),
    _one("stock_umbrella", "measure", "How many umbrellas are in stock?", 144, _c("count_in_stock", product="umbrella")),
    # two-step: 8 tune, 8 measure
    _two("oslo_f", "tune", "What is the temperature in Oslo in Fahrenheit?", 45.5,
         _c("get_weather", city="Oslo"), _c("convert_temperature", celsius=7.5, to="fahrenheit")),
    _two("graz_k", "measure", "What is the temperature in Graz in kelvin?", 270.65,
         _c("get_weather", city="Graz"), _c("convert_temperature", celsius=-2.5, to="kelvin")),
    _two("perth_f", "tune", "How hot is it in Perth right now, in degrees Fahrenheit?", 76.28,
         _c("get_weather", city="Perth"), _c("convert_temperature", celsius=24.6, to="fahrenheit")),
    _two("quito_f", "measure", "Tell me the current temperature in Quito in Fahrenheit.", 56.12,
         _c("get_weather", city="Quito"), _c("convert_temperature", celsius=13.4, to="fahrenheit")),
    _two("notebooks_12", "tune", "What do 12 notebooks cost?", 52.2,
         _c("get_price", product="notebook"), _c("multiply", a=4.35, b=12)),
    _two("lamps_4", "measure", "What would 4 desk lamps cost in total?", 127.6,
         _c("get_price", product="desk lamp"), _c("multiply", a=31.9, b=4)),
    _two("sky_3071", "tune", "What is the weather like where employee 3071 works?", "snow",
         _c("get_employee", employee_id=3071), _c("get_weather", city="Graz")),
    _two("temp_3124", "measure", "What is the temperature at the office of employee 3124?", 10.8,
         _c("get_employee", employee_id=3124), _c("get_weather", city="Cork")),
    _two("people_3502", "tune", "How many people live in the city where employee 3502 works?", 733_118,
         _c("get_employee", employee_id=3502), _c("get_population", city="Austin")),
    _two("people_3071", "measure", "What is the population of the city employee 3071 works in?", 291_072,
         _c("get_employee", employee_id=3071), _c("get_population", city="Graz")),
    _two("tenure_3388", "tune", "How many days had employee 3388 worked here by 2024-06-30?", 2776,
         _c("get_employee", employee_id=3388), _c("days_between", start="2016-11-23", end="2024-06-30")),
    _two("order_age", "measure", "How many days passed from the day order K-4582 was placed to 2024-05-01?", 44,
         _c("lookup_order", order_id="K-4582"), _c("days_between", start="2024-03-18", end="2024-05-01")),
    _two("usd_to_jpy", "tune", "How many yen do 250 US dollars buy?", 37_905,
         _c("exchange_rate", from_currency="USD", to_currency="JPY"), _c("multiply", a=250, b=151.62)),
    _two("usd_to_cad", "measure", "How many Canadian dollars is 80 US dollars?", 109.136,
         _c("exchange_rate", from_currency="USD", to_currency="CAD"), _c("multiply", a=80, b=1.3642)),
    _two("kettles_worth", "tune", "At 30 dollars each, what are all the kettles in stock worth together?", 690,
         _c("count_in_stock", product="kettle"), _c("multiply", a=23, b=30)),
    _two("staplers_worth", "measure", "At 2.5 dollars each, what are all the staplers in stock worth?", 92.5,
         _c("count_in_stock", product="stapler"), _c("multiply", a=37, b=2.5)),
    # no tool fits: 5 tune, 5 measure
    _none("haiku", "tune", "Write a haiku about autumn leaves."),
    _none("capital_japan", "measure", "What is the capital of Japan?"),
    _none("translate", "tune", "Translate 'thank you very much' into French."),
    _none("send_email", "measure", "Send an email to my manager saying I will be late."),
    _none("joke", "tune", "Tell me a short joke about computers."),
    _none("romeo", "measure", "Who wrote the play Romeo and Juliet?"),
    _none("book_table", "tune", "Book me a table for two at an Italian restaurant tonight."),
    _none("greeting", "measure", "Hello! How are you today?"),
    _none("boiling", "tune", "At what temperature does water boil at sea level, in Celsius?"),
    _none("reminder", "measure", "Set a reminder to call my mother tomorrow."),
)
