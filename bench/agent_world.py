"""A small world of lookups for multi-step agent tasks: tools whose results feed the next call,
and tasks whose final answer can be checked.

The data is made up (user 17 lives in Lyon, order B-2210 holds 3 items at 17.25), so a model
cannot answer from memory: every right answer needs the calls. Each task names the facts its
answer must state; `Task.check` reads words case-insensitively and numbers with or without
thousands commas (a whole number exactly, a fraction to within a cent).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentkit import Tool, tool

USERS = {
    17: {"name": "Ines Laurent", "city": "Lyon", "team": "Payments", "employer": "Globex"},
    42: {"name": "Dana Whitfield", "city": "Porto", "team": "Platform", "employer": "Initech"},
    58: {"name": "Tomas Berg", "city": "Oslo", "team": "Search", "employer": "Globex"},
}
CUSTOMERS = {
    204: {"name": "Rui Alves", "email": "rui.alves@example.com", "country": "Portugal", "city": "Porto"},
    311: {"name": "Mira Okafor", "email": "mira.okafor@example.com", "country": "Kenya", "city": "Nairobi"},
    415: {"name": "Lena Vogt", "email": "lena.vogt@example.com", "country": "Norway", "city": "Oslo"},
}
ORDERS = {
    "A-1007": {"customer_id": 311, "item": "desk lamp", "quantity": 2, "unit_price_usd": 38.5},
    "B-2210": {"customer_id": 204, "item": "notebook", "quantity": 3, "unit_price_usd": 17.25},
    "C-3301": {"customer_id": 415, "item": "office chair", "quantity": 4, "unit_price_usd": 129.0},
}
WEATHER = {
    "Lyon": (14.0, "cloudy"), "Porto": (19.0, "sunny"), "Oslo": (-3.0, "snow"),
    "Nairobi": (24.0, "light rain"), "Lisbon": (21.0, "sunny"), "Cairo": (31.0, "clear"),
}
CAPITALS = {"Portugal": "Lisbon", "Kenya": "Nairobi", "Norway": "Oslo", "Egypt": "Cairo", "France": "Paris"}
POPULATIONS = {"Lyon": 522_250, "Porto": 231_962, "Oslo": 709_037, "Nairobi": 4_397_073, "Lisbon": 545_923}
LOCAL_TIMES = {"Lyon": "10:41", "Porto": "09:41", "Oslo": "10:41", "Nairobi": "12:41"}
RATES = {("USD", "EUR"): 0.92, ("GBP", "JPY"): 191.3, ("EUR", "USD"): 1.087, ("USD", "GBP"): 0.79}
SYMBOLS = {"Globex": "GBX", "Initech": "INIT"}
PRICES = {"GBX": 123.4, "INIT": 58.75}


def _known(table: dict, key: object, what: str) -> object:
    if key not in table:
        raise KeyError(f"no {what} {key!r}; known: {', '.join(map(str, table))}")
    return table[key]


@tool
def get_user(user_id: int) -> dict:
    """Look up an employee by id.

    Args:
        user_id: The employee's numeric id.
    """
    return dict(_known(USERS, user_id, "user"))


@tool
def find_user(name: str) -> dict:
    """Find an employee's id from their full name.

    Args:
        name: The employee's full name.
    """
    for user_id, user in USERS.items():
        if user["name"].lower() == name.strip().lower():
            return {"user_id": user_id}
    raise KeyError(f"no user named {name!r}")


@tool
def get_order(order_id: str) -> dict:
    """Look up an order by its id, such as A-1007.

    Args:
        order_id: The order id.
    """
    return dict(_known(ORDERS, order_id.strip().upper(), "order"))


@tool
def get_customer(customer_id: int) -> dict:
    """Look up a customer by id.

    Args:
        customer_id: The customer's numeric id.
    """
    return dict(_known(CUSTOMERS, customer_id, "customer"))


@tool
def get_weather(city: str) -> dict:
    """Get the current weather in a city.

    Args:
        city: The city's name in English.
    """
    celsius, sky = _known(WEATHER, city.strip().title(), "weather for city")
    return {"city": city, "temperature_celsius": celsius, "sky": sky}


@tool
def get_capital(country: str) -> str:
    """Get the capital city of a country.

    Args:
        country: The country's name in English.
    """
    return _known(CAPITALS, country.strip().title(), "country")


@tool
def get_population(city: str) -> int:
    """Get the number of people living in a city.

    Args:
        city: The city's name in English.
    """
    return _known(POPULATIONS, city.strip().title(), "population for city")


@tool
def get_local_time(city: str) -> str:
    """Get the current local time (HH:MM) in a city.

    Args:
        city: The city's name in English.
    """
    return _known(LOCAL_TIMES, city.strip().title(), "time zone for city")


@tool
def get_exchange_rate(base: str, target: str) -> float:
    """Get how many units of the target currency one unit of the base currency buys.

    Args:
        base: ISO code of the currency converted from, such as CHF.
        target: ISO code of the currency converted to, such as SEK.
    """
    return _known(RATES, (base.strip().upper(), target.strip().upper()), "exchange rate")


@tool
def get_stock_symbol(company: str) -> str:
    """Get a company's stock ticker symbol.

    Args:
        company: The company's name.
    """
    return _known(SYMBOLS, company.strip().title(), "company")


@tool
def get_stock_price(symbol: str) -> dict:
    """Get the latest price of a stock.

    Args:
        symbol: The ticker symbol, such as ACME.
    """
    symbol = symbol.strip().upper()
    return {"symbol": symbol, "price": _known(PRICES, symbol, "symbol"), "currency": "USD"}


@tool
def add(a: float, b: float) -> float:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return round(a + b, 6)


@tool
def subtract(a: float, b: float) -> float:
    """Subtract b from a.

    Args:
        a: The number to subtract from.
        b: The number to subtract.
    """
    return round(a - b, 6)


@tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return round(a * b, 6)


TOOLS: tuple[Tool, ...] = (
    get_user, find_user, get_order, get_customer, get_weather, get_capital, get_population,
    get_local_time, get_exchange_rate, get_stock_symbol, get_stock_price, add, subtract, multiply,
)
SYSTEM_PROMPT = (
    "You are a helpful assistant with tools. Use the tools to look up every fact you do not "
    "know, one step at a time, passing what one tool returns to the next. When you have "
    "everything, answer the question in one short sentence that states the values."
)

Call = tuple[str, dict[str, object]]
"""A tool name and its arguments."""

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


@dataclass(frozen=True)
class Task:
    """A question, the facts its answer must state (numbers or words), and one shortest
    sequence of calls that finds them (each call's arguments come from earlier results)."""

    id: str
    question: str
    expect: tuple[str | float, ...]
    solution: tuple[Call, ...]

    def check(self, answer: str) -> bool:
        """Whether `answer` states every expected fact."""
        numbers = [float(n.replace(",", "")) for n in _NUMBER.findall(answer)]
        words = answer.lower()
        for fact in self.expect:
            if isinstance(fact, str):
                if fact.lower() not in words:
                    return False
            elif not any(abs(n - fact) <= (0 if isinstance(fact, int) else 0.011) for n in numbers):
                return False
        return True


def _c(tool_name: str, /, **arguments: object) -> Call:
    return (tool_name, arguments)


TASKS: tuple[Task, ...] = (
    Task("weather_of_user", "What is the temperature right now in the city where user 17 lives?", (14.0,),
         (_c("get_user", user_id=17), _c("get_weather", city="Lyon"))),
    Task("email_of_order", "What is the email address of the customer who placed order A-1007?",
         ("mira.okafor@example.com",), (_c("get_order", order_id="A-1007"), _c("get_customer", customer_id=311))),
    Task("capital_weather", "Customer 204 wants to visit the capital of their country. What is the "
         "capital, and what is the temperature there now?", ("Lisbon", 21.0),
         (_c("get_customer", customer_id=204), _c("get_capital", country="Portugal"), _c("get_weather", city="Lisbon"))),
    Task("order_total", "What is the total price in USD of order B-2210 (quantity times unit price)?", (51.75,),
         (_c("get_order", order_id="B-2210"), _c("multiply", a=3, b=17.25))),
    Task("order_total_eur", "What is the total price of order B-2210 in EUR?", (47.61,),
         (_c("get_order", order_id="B-2210"), _c("multiply", a=3, b=17.25),
          _c("get_exchange_rate", base="USD", target="EUR"), _c("multiply", a=51.75, b=0.92))),
    Task("capital_population", "How many people live in the capital of Kenya?", (4_397_073,),
         (_c("get_capital", country="Kenya"), _c("get_population", city="Nairobi"))),
    Task("warmer_city", "Which city is warmer right now, Oslo or Cairo?", ("Cairo",),
         (_c("get_weather", city="Oslo"), _c("get_weather", city="Cairo"))),
    Task("population_sum", "How many people live in Lyon and Porto together?", (754_212,),
         (_c("get_population", city="Lyon"), _c("get_population", city="Porto"), _c("add", a=522_250, b=231_962))),
    Task("stock_in_eur", "What is the price of GBX stock in EUR?", (113.53,),
         (_c("get_stock_price", symbol="GBX"), _c("get_exchange_rate", base="USD", target="EUR"),
          _c("multiply", a=123.4, b=0.92))),
    Task("team_by_name", "Which team is Dana Whitfield on?", ("Platform",),
         (_c("find_user", name="Dana Whitfield"), _c("get_user", user_id=42))),
    Task("time_of_user", "What is the local time in the city where user 42 lives?", ("09:41",),
         (_c("get_user", user_id=42), _c("get_local_time", city="Porto"))),
    Task("order_customer_country", "Who placed order C-3301, and in which country do they live?",
         ("Lena Vogt", "Norway"), (_c("get_order", order_id="C-3301"), _c("get_customer", customer_id=415))),
    Task("items_in_orders", "How many items do orders A-1007 and B-2210 hold together?", (5,),
         (_c("get_order", order_id="A-1007"), _c("get_order", order_id="B-2210"), _c("add", a=2, b=3))),
    Task("sky_in_capital", "What is the sky like right now in the capital of Norway?", ("snow",),
         (_c("get_capital", country="Norway"), _c("get_weather", city="Oslo"))),
    Task("discount", "What is 15% of the total price in USD of order C-3301?", (77.4,),
         (_c("get_order", order_id="C-3301"), _c("multiply", a=4, b=129.0), _c("multiply", a=516.0, b=0.15))),
    Task("weather_of_order", "What is the temperature in the city of the customer who placed order C-3301?",
         (-3.0,), (_c("get_order", order_id="C-3301"), _c("get_customer", customer_id=415),
                   _c("get_weather", city="Oslo"))),
    Task("convert_gbp", "How many Japanese yen (JPY) do 250 British pounds (GBP) buy?", (47_825,),
         (_c("get_exchange_rate", base="GBP", target="JPY"), _c("multiply", a=250, b=191.3))),
    Task("employer_stock", "What is the stock price in USD of the company user 58 works for?", (123.4,),
         (_c("get_user", user_id=58), _c("get_stock_symbol", company="Globex"), _c("get_stock_price", symbol="GBX"))),
    Task("temperature_gap", "How many degrees warmer is it in Lyon than in Oslo right now?", (17.0,),
         (_c("get_weather", city="Lyon"), _c("get_weather", city="Oslo"), _c("subtract", a=14.0, b=-3.0))),
    Task("city_of_named_user", "In which city does Ines Laurent live, and what is the weather like there?",
         ("Lyon", 14.0), (_c("find_user", name="Ines Laurent"), _c("get_user", user_id=17),
                          _c("get_weather", city="Lyon"))),
)
