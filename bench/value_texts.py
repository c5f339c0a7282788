"""The texts of the value benchmark (`python -m bench.values`), each with its true values.

Six pydantic models of the kind users write (a contact, an order line, a meeting, an address,
a product listing, a support ticket), and twenty short texts for each, written for this
project: names and places from many languages, values written as people write them (a date in
words to be given as an ISO date, a price with a currency symbol or word, a priority implied by
"urgent"), and distractors (two names, two numbers, two dates, a total beside a unit price).

Each text's `truth` is the model instance it should give, as a dict (an optional field the
text leaves out is None). Each text's `split` was fixed when it was written, before anything
was measured: "tune" (to look at and tune on) or "measure" (only to report), alternating within
each schema, so each schema gives ten texts to each half. A text added later takes its own
split; no text's split changes.

`KINDS` names what kind of value each field holds, which is how the benchmark reports them:
name (people, places, companies, products), free string (an item, a title, a street, a
summary), code (a phone number, a postal code), integer, decimal, enum, date, time, email,
list, bool. A field whose true value is None is reported as "optional-absent".
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

Split = Literal["tune", "measure"]
SPLITS: dict[str, Split] = {"t": "tune", "m": "measure"}


class Contact(BaseModel):
    name: str
    email: str
    phone: str | None = None
    company: str | None = None


class Currency(str, Enum):
    GBP = "GBP"
    USD = "USD"
    EUR = "EUR"
    JPY = "JPY"
    CHF = "CHF"


class OrderLine(BaseModel):
    customer: str
    item: str
    quantity: int
    unit_price: Decimal
    currency: Currency


class Meeting(BaseModel):
    title: str
    date: datetime.date
    start_time: Annotated[str, Field(pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$")]
    attendees: list[str]


class Address(BaseModel):
    recipient: str | None = None
    street: str
    city: str
    postal_code: Annotated[str, Field(pattern=r"^[A-Z0-9][A-Z0-9 -]{1,8}[A-Z0-9]$")]
    country: str


class Product(BaseModel):
    name: str
    price: float
    in_stock: bool
    tags: list[str]


class Ticket(BaseModel):
    category: Literal["billing", "technical", "account", "shipping", "other"]
    priority: Literal["low", "medium", "high"]
    summary: str = Field(description="the subject line of the message")
    customer_email: str | None = None


MODELS: dict[str, type[BaseModel]] = {
    "contact": Contact, "order": OrderLine, "meeting": Meeting,
    "address": Address, "product": Product, "ticket": Ticket,
}
KINDS: dict[str, dict[str, str]] = {
    "contact": {"name": "name", "email": "email", "phone": "code", "company": "name"},
    "order": {"customer": "name", "item": "free string", "quantity": "integer", "unit_price": "decimal",
              "currency": "enum"},
    "meeting": {"title": "free string", "date": "date", "start_time": "time", "attendees": "list"},
    "address": {"recipient": "name", "street": "free string", "city": "name", "postal_code": "code",
                "country": "name"},
    "product": {"name": "name", "price": "decimal", "in_stock": "bool", "tags": "list"},
    "ticket": {"category": "enum", "priority": "enum", "summary": "free string", "customer_email": "email"},
}


@dataclass(frozen=True)
class Case:
    """One text, the schema it is read into, its half of the split and its true values."""

    id: str
    schema: str
    split: Split
    text: str
    truth: dict[str, Any]

    @property
    def model(self) -> type[BaseModel]:
        return MODELS[self.schema]


def _cases(schema: str, rows: list[tuple[str, str, dict[str, Any]]]) -> list[Case]:
    fields = KINDS[schema]
    return [
        Case(f"{schema}-{n:02d}", schema, SPLITS[split], text, {name: truth.get(name) for name in fields})
        for n, (split, text, truth) in enumerate(rows, 1)
    ]


CONTACTS = _cases("contact", [
    ("t", "Hi, I'm Jürgen Müller from Brandt & Söhne. Reach me at j.mueller@brandt-soehne.de or +49 30 5550 1234.",
     {"name": "Jürgen Müller", "email": "j.mueller@brandt-soehne.de", "phone": "+49 30 5550 1234",
      "company": "Brandt & Söhne"}),
    ("m", "Please add Aiko Nakamura to the list: aiko.nakamura@example.jp, mobile 090-1234-5678.",
     {"name": "Aiko Nakamura", "email": "aiko.nakamura@example.jp", "phone": "090-1234-5678"}),
    ("t", "The contact for the Kraków office is Zofia Wiśniewska (zofia.w@polmarket.pl), who works for PolMarket. "
          "Her desk phone is +48 12 345 67 89.",
     {"name": "Zofia Wiśniewska", "email": "zofia.w@polmarket.pl", "phone": "+48 12 345 67 89",
      "company": "PolMarket"}),
    ("m", "You can write to Tomás Ferreira at tomas@ferreira-design.com.br; he runs Ferreira Design in São Paulo.",
     {"name": "Tomás Ferreira", "email": "tomas@ferreira-design.com.br", "company": "Ferreira Design"}),
    ("t", "New lead: Olumide Adeyemi, olumide.adeyemi@gmail.com, phone 0803 555 0192. Met him at the Lagos "
          "fintech fair; he did not mention an employer.",
     {"name": "Olumide Adeyemi", "email": "olumide.adeyemi@gmail.com", "phone": "0803 555 0192"}),
    ("m", "From: Ingrid Johansson <ingrid.johansson@nordvik.se>\nNordvik AB, Göteborg\nTel: +46 31 700 12 34",
     {"name": "Ingrid Johansson", "email": "ingrid.johansson@nordvik.se", "phone": "+46 31 700 12 34",
      "company": "Nordvik AB"}),
    ("t", "Call Priya Venkataraman on 98450 12345 about the renewal, or email priya.v@tatasky.in. "
          "She is with Tata Sky.",
     {"name": "Priya Venkataraman", "email": "priya.v@tatasky.in", "phone": "98450 12345", "company": "Tata Sky"}),
    ("m", "Leave a message for Rafael Ortega; his address is rafa.ortega@example.es and he prefers not to share "
          "a phone number.",
     {"name": "Rafael Ortega", "email": "rafa.ortega@example.es"}),
    ("t", "My colleague Chen Wei forwarded your note. Please send the contract to our lawyer, Beatriz Santos, "
          "at bsantos@lexpartners.pt, tel. +351 21 000 4455. We are both at Lex Partners.",
     {"name": "Beatriz Santos", "email": "bsantos@lexpartners.pt", "phone": "+351 21 000 4455",
      "company": "Lex Partners"}),
    ("m", "Dmitri Volkov — dmitri.volkov@severstal-trade.ru — Severstal Trade, +7 812 555 3010.",
     {"name": "Dmitri Volkov", "email": "dmitri.volkov@severstal-trade.ru", "phone": "+7 812 555 3010",
      "company": "Severstal Trade"}),
    ("t", "Email fatou.diop@senelec.sn for anything about the grid project. Fatou Diop answers within a day.",
     {"name": "Fatou Diop", "email": "fatou.diop@senelec.sn"}),
    ("m", "Hello, this is Éloïse Martin. My old address eloise@wanadoo.fr no longer works; please use "
          "eloise.martin@proton.me from now on. Phone: 06 12 34 56 78.",
     {"name": "Éloïse Martin", "email": "eloise.martin@proton.me", "phone": "06 12 34 56 78"}),
    ("t", "Kwabena Asante, procurement lead at Ashanti Cocoa Ltd., can be reached at k.asante@ashanticocoa.com.gh "
          "or +233 24 555 7788.",
     {"name": "Kwabena Asante", "email": "k.asante@ashanticocoa.com.gh", "phone": "+233 24 555 7788",
      "company": "Ashanti Cocoa Ltd."}),
    ("m", "Add Σοφία Παπαδοπούλου to the newsletter: sofia.p@athensmail.gr.",
     {"name": "Σοφία Παπαδοπούλου", "email": "sofia.p@athensmail.gr"}),
    ("t", "Our supplier contact at Ωmega Tools is Lars Eriksen: lars@omegatools.no, +47 22 33 44 55.",
     {"name": "Lars Eriksen", "email": "lars@omegatools.no", "phone": "+47 22 33 44 55", "company": "Ωmega Tools"}),
    ("m", "Hi! Nguyễn Thị Lan here, project manager at VinaSoft. Best number is +84 28 3822 1199, "
          "email lan.nguyen@vinasoft.vn.",
     {"name": "Nguyễn Thị Lan", "email": "lan.nguyen@vinasoft.vn", "phone": "+84 28 3822 1199",
      "company": "VinaSoft"}),
    ("t", "Sean O'Connor (sean.oconnor@greenfield.ie) called from Greenfield Farms this morning; call him back "
          "on 087 123 4567.",
     {"name": "Sean O'Connor", "email": "sean.oconnor@greenfield.ie", "phone": "087 123 4567",
      "company": "Greenfield Farms"}),
    ("m", "Mariam Al-Sayed from Gulf Bridge Logistics wrote about order 55102. Her email is "
          "mariam.alsayed@gulfbridge.ae and her phone is +971 4 555 0100.",
     {"name": "Mariam Al-Sayed", "email": "mariam.alsayed@gulfbridge.ae", "phone": "+971 4 555 0100",
      "company": "Gulf Bridge Logistics"}),
    ("t", "Contact: Hannah Schmidt. hannah.schmidt@uni-heidelberg.de",
     {"name": "Hannah Schmidt", "email": "hannah.schmidt@uni-heidelberg.de"}),
    ("m", "Please loop in Raj Malhotra from Zenith Analytics: raj@zenith-analytics.io. He asked us to email "
          "rather than call.",
     {"name": "Raj Malhotra", "email": "raj@zenith-analytics.io", "company": "Zenith Analytics"}),
])

ORDERS = _cases("order", [
    ("t", "Müller GmbH ordered 4 ceramic bowls at £12.50 each.",
     {"customer": "Müller GmbH", "item": "ceramic bowls", "quantity": 4, "unit_price": 12.50, "currency": "GBP"}),
    ("m", "Invoice line: 15 yoga mats for Sunrise Studio, $24.99 per mat.",
     {"customer": "Sunrise Studio", "item": "yoga mats", "quantity": 15, "unit_price": 24.99, "currency": "USD"}),
    ("t", "Please bill Café Lumière for 3 espresso machines at €1,249.00 apiece.",
     {"customer": "Café Lumière", "item": "espresso machines", "quantity": 3, "unit_price": 1249.00,
      "currency": "EUR"}),
    ("m", "Kenji Watanabe bought 36 notebooks; each one cost 2.40 euros.",
     {"customer": "Kenji Watanabe", "item": "notebooks", "quantity": 36, "unit_price": 2.40, "currency": "EUR"}),
    ("t", "Order from Łódź Textiles: 120 cotton towels, 3.75 euros a piece, 450 euros in total.",
     {"customer": "Łódź Textiles", "item": "cotton towels", "quantity": 120, "unit_price": 3.75,
      "currency": "EUR"}),
    ("m", "Bakery Nørrebro took 8 flour sacks at £18.50 each (£148 altogether).",
     {"customer": "Bakery Nørrebro", "item": "flour sacks", "quantity": 8, "unit_price": 18.50,
      "currency": "GBP"}),
    ("t", "Two standing desks for Ana Costa, $389 each, shipped Monday.",
     {"customer": "Ana Costa", "item": "standing desks", "quantity": 2, "unit_price": 389, "currency": "USD"}),
    ("m", "Customer: Polar Outfitters (order placed by Per Lindqvist). 6 down jackets at $210.00 each.",
     {"customer": "Polar Outfitters", "item": "down jackets", "quantity": 6, "unit_price": 210.00,
      "currency": "USD"}),
    ("t", "Hotel Sacher Wien reordered 250 linen napkins, €4.20 each.",
     {"customer": "Hotel Sacher Wien", "item": "linen napkins", "quantity": 250, "unit_price": 4.20,
      "currency": "EUR"}),
    ("m", "Rosa Jiménez wants 12 beeswax candles at 7.95 euros per candle.",
     {"customer": "Rosa Jiménez", "item": "beeswax candles", "quantity": 12, "unit_price": 7.95,
      "currency": "EUR"}),
    ("t", "Order #4471 for São Paulo Coffee Co.: 40 burr grinders at $56.30 each.",
     {"customer": "São Paulo Coffee Co.", "item": "burr grinders", "quantity": 40, "unit_price": 56.30,
      "currency": "USD"}),
    ("m", "Kofi Boateng ordered a dozen solar lanterns at £32 each.",
     {"customer": "Kofi Boateng", "item": "solar lanterns", "quantity": 12, "unit_price": 32, "currency": "GBP"}),
    ("t", "Supplies for Ωmega Robotics: 5 servo motors, unit price €89.90, delivery in 2 weeks.",
     {"customer": "Ωmega Robotics", "item": "servo motors", "quantity": 5, "unit_price": 89.90,
      "currency": "EUR"}),
    ("m", "Yuki Tanaka paid ¥850 each for 30 enamel pins.",
     {"customer": "Yuki Tanaka", "item": "enamel pins", "quantity": 30, "unit_price": 850, "currency": "JPY"}),
    ("t", "Ship 9 wool blankets to Alpenhof Hotel in Zermatt; they cost 65 Swiss francs apiece.",
     {"customer": "Alpenhof Hotel", "item": "wool blankets", "quantity": 9, "unit_price": 65, "currency": "CHF"}),
    ("m", "Line 3 of invoice 2025-118: Istanbul Carpets Ltd, 2 kilim rugs, £640.00 per rug.",
     {"customer": "Istanbul Carpets Ltd", "item": "kilim rugs", "quantity": 2, "unit_price": 640.00,
      "currency": "GBP"}),
    ("t", "Maximilian Weiß bought 18 cast-iron pans at €42.50 each.",
     {"customer": "Maximilian Weiß", "item": "cast-iron pans", "quantity": 18, "unit_price": 42.50,
      "currency": "EUR"}),
    ("m", "For Chidi Okonkwo: 7 hiking backpacks, $119.99 apiece, 10% discount applied at checkout.",
     {"customer": "Chidi Okonkwo", "item": "hiking backpacks", "quantity": 7, "unit_price": 119.99,
      "currency": "USD"}),
    ("t", "Les Délices de Lyon orders 60 baking trays at 11 euros each.",
     {"customer": "Les Délices de Lyon", "item": "baking trays", "quantity": 60, "unit_price": 11,
      "currency": "EUR"}),
    ("m", "Anya Petrova ordered 25 watercolour sets at £14.25 each for her school in Novosibirsk.",
     {"customer": "Anya Petrova", "item": "watercolour sets", "quantity": 25, "unit_price": 14.25,
      "currency": "GBP"}),
])

MEETINGS = _cases("meeting", [
    ("t", "Budget Review on March 14th, 2025 at 9:30 with Alice, Bob and Chiara.",
     {"title": "Budget Review", "date": "2025-03-14", "start_time": "09:30", "attendees": ["Alice", "Bob", "Chiara"]}),
    ("m", "Let's hold the Sprint Planning on Tuesday, April 1st, 2025, starting at 10:00. Invite Elena and Jonas.",
     {"title": "Sprint Planning", "date": "2025-04-01", "start_time": "10:00", "attendees": ["Elena", "Jonas"]}),
    ("t", "The Quarterly Board Meeting is set for 7 October 2025 at 2 pm; attending: Margarethe Vogel, "
          "Hiroshi Sato, Amara Nwosu.",
     {"title": "Quarterly Board Meeting", "date": "2025-10-07", "start_time": "14:00",
      "attendees": ["Margarethe Vogel", "Hiroshi Sato", "Amara Nwosu"]}),
    ("m", "Design Critique: June 3rd, 2025. Doors open at 13:45, the session starts at 14:00. "
          "Participants: Lukas, Ines, Mehmet.",
     {"title": "Design Critique", "date": "2025-06-03", "start_time": "14:00",
      "attendees": ["Lukas", "Ines", "Mehmet"]}),
    ("t", "Reminder: 'Kickoff: Project Łódź' on January 20th, 2026 at 08:15, with Paweł Nowak and "
          "Agnieszka Kowalska.",
     {"title": "Kickoff: Project Łódź", "date": "2026-01-20", "start_time": "08:15",
      "attendees": ["Paweł Nowak", "Agnieszka Kowalska"]}),
    ("m", "The Vendor Demo moved from May 5th to May 12th, 2025, still at 11:30. Only Sven and Farah need to come.",
     {"title": "Vendor Demo", "date": "2025-05-12", "start_time": "11:30", "attendees": ["Sven", "Farah"]}),
    ("t", "Team Lunch at Trattoria Roma on the 22nd of August 2025 at half past twelve: Giulia, Marco, Ayesha "
          "and Tom are in.",
     {"title": "Team Lunch", "date": "2025-08-22", "start_time": "12:30",
      "attendees": ["Giulia", "Marco", "Ayesha", "Tom"]}),
    ("m", "Please book the Retrospective for Friday, February 28, 2025 at 4:15 pm for Noor, Dae-jung and Olivia.",
     {"title": "Retrospective", "date": "2025-02-28", "start_time": "16:15",
      "attendees": ["Noor", "Dae-jung", "Olivia"]}),
    ("t", "Hiring Panel on November 4th, 2025 at 09:00 with Keiko Ito, Björn Lund and Rafael Souza.",
     {"title": "Hiring Panel", "date": "2025-11-04", "start_time": "09:00",
      "attendees": ["Keiko Ito", "Björn Lund", "Rafael Souza"]}),
    ("m", "Security Training on December 9th, 2025, 15:30, for the whole ops team: Aleksandra, Yusuf, Mei and Diego.",
     {"title": "Security Training", "date": "2025-12-09", "start_time": "15:30",
      "attendees": ["Aleksandra", "Yusuf", "Mei", "Diego"]}),
    ("t", "On the 1st of July 2025 at 10:45 we have the Customer Advisory Call with Stella Park of Ωmega Corp "
          "and our Ravi Shah.",
     {"title": "Customer Advisory Call", "date": "2025-07-01", "start_time": "10:45",
      "attendees": ["Stella Park", "Ravi Shah"]}),
    ("m", "Ana and Bruno: the Roadmap Workshop is on September 17th, 2025, 13:00 sharp.",
     {"title": "Roadmap Workshop", "date": "2025-09-17", "start_time": "13:00", "attendees": ["Ana", "Bruno"]}),
    ("t", "Offsite Planning is on the second of October 2025 at 9 am, with Hélène, Kasper and Zainab.",
     {"title": "Offsite Planning", "date": "2025-10-02", "start_time": "09:00",
      "attendees": ["Hélène", "Kasper", "Zainab"]}),
    ("m", "Can we do the Contract Signing on March 3rd, 2026 at 17:00? It will be me (Jonas Keller) and "
          "Olga Smirnova from the other side.",
     {"title": "Contract Signing", "date": "2026-03-03", "start_time": "17:00",
      "attendees": ["Jonas Keller", "Olga Smirnova"]}),
    ("t", "Weekly Sync is at 8:30 on Monday, April 14th, 2025 (not 9:30 as last week) for Tariq, Lena and Sam.",
     {"title": "Weekly Sync", "date": "2025-04-14", "start_time": "08:30", "attendees": ["Tariq", "Lena", "Sam"]}),
    ("m", "Product Launch Rehearsal: April 30th, 2025 at 18:00. Attendees are Chloé Dubois, Ömer Yılmaz and "
          "Kaito Mori.",
     {"title": "Product Launch Rehearsal", "date": "2025-04-30", "start_time": "18:00",
      "attendees": ["Chloé Dubois", "Ömer Yılmaz", "Kaito Mori"]}),
    ("t", "Office Yoga on the 5th of May 2025, at 7:15 in the morning; Nadia and Felix signed up.",
     {"title": "Office Yoga", "date": "2025-05-05", "start_time": "07:15", "attendees": ["Nadia", "Felix"]}),
    ("m", "The Architecture Review will take place on 19 June 2025 from 10:00 to 11:30 with Pedro, Wanjiru "
          "and Ilse.",
     {"title": "Architecture Review", "date": "2025-06-19", "start_time": "10:00",
      "attendees": ["Pedro", "Wanjiru", "Ilse"]}),
    ("t", "Parent–Teacher Meeting, Thursday 11 September 2025, 6:45 pm, with Grace Okafor and Erik Lindgren.",
     {"title": "Parent–Teacher Meeting", "date": "2025-09-11", "start_time": "18:45",
      "attendees": ["Grace Okafor", "Erik Lindgren"]}),
    ("m", "Mark your calendars: Board Dinner, December 12th, 2025 at 19:30. Guests: Isabella Rossi, Ahmed Karim, "
          "Sun-hee Park and Thomas Brown.",
     {"title": "Board Dinner", "date": "2025-12-12", "start_time": "19:30",
      "attendees": ["Isabella Rossi", "Ahmed Karim", "Sun-hee Park", "Thomas Brown"]}),
])

ADDRESSES = _cases("address", [
    ("t", "Ship to Anna Müller, Hauptstraße 5, 10115 Berlin, Germany.",
     {"recipient": "Anna Müller", "street": "Hauptstraße 5", "city": "Berlin", "postal_code": "10115",
      "country": "Germany"}),
    ("m", "Our warehouse is at ul. Piotrkowska 104, 90-001 Łódź, Poland.",
     {"street": "ul. Piotrkowska 104", "city": "Łódź", "postal_code": "90-001", "country": "Poland"}),
    ("t", "Send the samples to Av. Paulista 1578, São Paulo, 01310-100, Brazil.",
     {"street": "Av. Paulista 1578", "city": "São Paulo", "postal_code": "01310-100", "country": "Brazil"}),
    ("m", "Deliver to 10 Downing Street, London SW1A 2AA, United Kingdom, attention: Oliver Clarke.",
     {"recipient": "Oliver Clarke", "street": "10 Downing Street", "city": "London", "postal_code": "SW1A 2AA",
      "country": "United Kingdom"}),
    ("t", "The office moved to Rue du Faubourg Saint-Honoré 55, 75008 Paris, France, from its old address in Lyon.",
     {"street": "Rue du Faubourg Saint-Honoré 55", "city": "Paris", "postal_code": "75008", "country": "France"}),
    ("m", "Please mail the invoice to Kenji Sato, 2-3 Marunouchi, Tokyo 100-0005, Japan.",
     {"recipient": "Kenji Sato", "street": "2-3 Marunouchi", "city": "Tokyo", "postal_code": "100-0005",
      "country": "Japan"}),
    ("t", "Return address: Bahnhofstrasse 21, 8001 Zürich, Switzerland.",
     {"street": "Bahnhofstrasse 21", "city": "Zürich", "postal_code": "8001", "country": "Switzerland"}),
    ("m", "I live at 415 Mission Street, San Francisco, CA 94105, United States.",
     {"street": "415 Mission Street", "city": "San Francisco", "postal_code": "94105",
      "country": "United States"}),
    ("t", "Lieferadresse: Familie Weber, Mariahilfer Straße 120, 1070 Wien, Österreich.",
     {"recipient": "Familie Weber", "street": "Mariahilfer Straße 120", "city": "Wien", "postal_code": "1070",
      "country": "Österreich"}),
    ("m", "Parcel for Ngozi Eze, 14 Admiralty Way, Lagos 106104, Nigeria.",
     {"recipient": "Ngozi Eze", "street": "14 Admiralty Way", "city": "Lagos", "postal_code": "106104",
      "country": "Nigeria"}),
    ("t", "Our Dublin office: 3 Grand Canal Square, Dublin D02 X285, Ireland.",
     {"street": "3 Grand Canal Square", "city": "Dublin", "postal_code": "D02 X285", "country": "Ireland"}),
    ("m", "Could you send it to Ελένη Γεωργίου, Ermou 25, 105 63 Athens, Greece?",
     {"recipient": "Ελένη Γεωργίου", "street": "Ermou 25", "city": "Athens", "postal_code": "105 63",
      "country": "Greece"}),
    ("t", "New address from March: Keizersgracht 123, 1015 CJ Amsterdam, Netherlands.",
     {"street": "Keizersgracht 123", "city": "Amsterdam", "postal_code": "1015 CJ", "country": "Netherlands"}),
    ("m", "Bill to: Rahul Gupta, 12 MG Road, Bengaluru 560001, India.",
     {"recipient": "Rahul Gupta", "street": "12 MG Road", "city": "Bengaluru", "postal_code": "560001",
      "country": "India"}),
    ("t", "Send the keys to Sofía Ramírez at Calle de Alcalá 48, 28014 Madrid, Spain, not to her sister in Sevilla.",
     {"recipient": "Sofía Ramírez", "street": "Calle de Alcalá 48", "city": "Madrid", "postal_code": "28014",
      "country": "Spain"}),
    ("m", "Pick-up point: 200 Queen Street West, Toronto, ON M5V 3L9, Canada.",
     {"street": "200 Queen Street West", "city": "Toronto", "postal_code": "M5V 3L9", "country": "Canada"}),
    ("t", "Postal address: Åsa Lindberg, Drottninggatan 33, 111 51 Stockholm, Sweden.",
     {"recipient": "Åsa Lindberg", "street": "Drottninggatan 33", "city": "Stockholm", "postal_code": "111 51",
      "country": "Sweden"}),
    ("m", "Ωmega Labs Pty Ltd, 45 George Street, Sydney NSW 2000, Australia.",
     {"recipient": "Ωmega Labs Pty Ltd", "street": "45 George Street", "city": "Sydney", "postal_code": "2000",
      "country": "Australia"}),
    ("t", "Ship the replacement to Tran Van Minh, 72 Le Thanh Ton, Ho Chi Minh City 700000, Vietnam.",
     {"recipient": "Tran Van Minh", "street": "72 Le Thanh Ton", "city": "Ho Chi Minh City",
      "postal_code": "700000", "country": "Vietnam"}),
    ("m", "Deliver to Rua Augusta 210, 1100-053 Lisboa, Portugal; the buyer is João Pereira.",
     {"recipient": "João Pereira", "street": "Rua Augusta 210", "city": "Lisboa", "postal_code": "1100-053",
      "country": "Portugal"}),
])

PRODUCTS = _cases("product", [
    ("t", "The Ωmega Trail Runner 2 costs $129.99 and is in stock. Tags: running, trail, waterproof.",
     {"name": "Ωmega Trail Runner 2", "price": 129.99, "in_stock": True, "tags": ["running", "trail", "waterproof"]}),
    ("m", "Bamboo Cutting Board, €24.50, currently sold out. Tagged kitchen, eco.",
     {"name": "Bamboo Cutting Board", "price": 24.50, "in_stock": False, "tags": ["kitchen", "eco"]}),
    ("t", "Nordic Wool Scarf, £35, available now; tags: winter, accessories, wool.",
     {"name": "Nordic Wool Scarf", "price": 35, "in_stock": True, "tags": ["winter", "accessories", "wool"]}),
    ("m", "We no longer have the Kyoto Matcha Set (¥3,200) on the shelf; tags tea, gift.",
     {"name": "Kyoto Matcha Set", "price": 3200, "in_stock": False, "tags": ["tea", "gift"]}),
    ("t", "Listing: 'Café Crème Espresso Beans 1kg', 18.90 euros, in stock, tags coffee and organic.",
     {"name": "Café Crème Espresso Beans 1kg", "price": 18.90, "in_stock": True, "tags": ["coffee", "organic"]}),
    ("m", "The Solar Camping Lantern was $45, now $39.99 on sale; 12 left in the warehouse. "
          "Tags: camping, solar, outdoor.",
     {"name": "Solar Camping Lantern", "price": 39.99, "in_stock": True, "tags": ["camping", "solar", "outdoor"]}),
    ("t", "Back in stock: Müller Precision Chef's Knife at €89. Tags: kitchen, knives.",
     {"name": "Müller Precision Chef's Knife", "price": 89, "in_stock": True, "tags": ["kitchen", "knives"]}),
    ("m", "Łódź Linen Duvet Cover, 64.00 euros, out of stock until June. Tagged: bedding, linen.",
     {"name": "Łódź Linen Duvet Cover", "price": 64.00, "in_stock": False, "tags": ["bedding", "linen"]}),
    ("t", "Product: Andes Alpaca Sweater. Price: $149.00. Stock: 0. Tags: knitwear, alpaca, winter.",
     {"name": "Andes Alpaca Sweater", "price": 149.00, "in_stock": False, "tags": ["knitwear", "alpaca", "winter"]}),
    ("m", "The Sahara Leather Journal sells for £22.75 and we have 40 in stock; tags are stationery, leather, gift.",
     {"name": "Sahara Leather Journal", "price": 22.75, "in_stock": True,
      "tags": ["stationery", "leather", "gift"]}),
    ("t", "Aurora Desk Lamp, 59.95 dollars, ships today. Tags: lighting, office.",
     {"name": "Aurora Desk Lamp", "price": 59.95, "in_stock": True, "tags": ["lighting", "office"]}),
    ("m", "Sorry, the Fjord Rain Jacket (€179) is sold out in every size. Tags: outdoor, rainwear.",
     {"name": "Fjord Rain Jacket", "price": 179, "in_stock": False, "tags": ["outdoor", "rainwear"]}),
    ("t", "Mochi Plush Cat, $16.50, in stock, tagged toys, kawaii, gifts.",
     {"name": "Mochi Plush Cat", "price": 16.50, "in_stock": True, "tags": ["toys", "kawaii", "gifts"]}),
    ("m", "Our Tuscan Olive Oil 500 ml is back on the shelf at €12.40 a bottle. Tags: pantry, italian.",
     {"name": "Tuscan Olive Oil 500 ml", "price": 12.40, "in_stock": True, "tags": ["pantry", "italian"]}),
    ("t", "Zen Garden Kit: unavailable, was priced at $34.00. Tags: home, decor, mindfulness.",
     {"name": "Zen Garden Kit", "price": 34.00, "in_stock": False, "tags": ["home", "decor", "mindfulness"]}),
    ("m", "São Jorge Cheese Wedge, 9.80 euros per wedge, plenty in stock; tags: cheese, portuguese.",
     {"name": "São Jorge Cheese Wedge", "price": 9.80, "in_stock": True, "tags": ["cheese", "portuguese"]}),
    ("t", "The 'Himalaya Pink Salt Grinder' is £7.99 and available. Tags: spices.",
     {"name": "Himalaya Pink Salt Grinder", "price": 7.99, "in_stock": True, "tags": ["spices"]}),
    ("m", "Vienna Pastry Tin Set, €27.00, no stock left; tagged baking, kitchen, gift.",
     {"name": "Vienna Pastry Tin Set", "price": 27.00, "in_stock": False, "tags": ["baking", "kitchen", "gift"]}),
    ("t", "Restocked today: Sakura Ceramic Teapot, priced at $42.00, tags tea, ceramics, japanese.",
     {"name": "Sakura Ceramic Teapot", "price": 42.00, "in_stock": True, "tags": ["tea", "ceramics", "japanese"]}),
    ("m", "Ωmega Smart Thermostat, 199 dollars, 3 units in stock, 2-year warranty. Tags: smart home, energy.",
     {"name": "Ωmega Smart Thermostat", "price": 199, "in_stock": True, "tags": ["smart home", "energy"]}),
])

TICKETS = _cases("ticket", [
    ("t", "Subject: Charged twice for order 5521\nHi, my card was billed two times this morning. Please fix this "
          "urgently. maria.gonzalez@correo.mx",
     {"category": "billing", "priority": "high", "summary": "Charged twice for order 5521",
      "customer_email": "maria.gonzalez@correo.mx"}),
    ("m", "Subject: App crashes on startup\nSince the update the app closes right after opening. Not urgent, "
          "I can use the website meanwhile.",
     {"category": "technical", "priority": "low", "summary": "App crashes on startup"}),
    ("t", "Subject: Cannot reset my password\nThe reset link never arrives at lukas.becker@web.de. This is urgent: "
          "I need access today for a client meeting.",
     {"category": "account", "priority": "high", "summary": "Cannot reset my password",
      "customer_email": "lukas.becker@web.de"}),
    ("m", "Subject: Parcel stuck in customs\nMy package to Łódź has been in customs for ten days. Medium priority, "
          "please. Contact: piotr.zielinski@onet.pl",
     {"category": "shipping", "priority": "medium", "summary": "Parcel stuck in customs",
      "customer_email": "piotr.zielinski@onet.pl"}),
    ("t", "Subject: Wrong VAT on invoice INV-2291\nThe invoice shows 19% VAT but we are exempt. Low priority; fix it "
          "on the next invoice. Email: accounts@hofmann-bau.de",
     {"category": "billing", "priority": "low", "summary": "Wrong VAT on invoice INV-2291",
      "customer_email": "accounts@hofmann-bau.de"}),
    ("m", "Subject: API returns 500 errors\nEvery request to /v2/orders fails since 08:00 and our shop is down. "
          "This is critical! ana.silva@empresa.com.br",
     {"category": "technical", "priority": "high", "summary": "API returns 500 errors",
      "customer_email": "ana.silva@empresa.com.br"}),
    ("t", "Subject: Change the name on my account\nI married and my surname is now Demir. No rush. "
          "yusuf.demir@posteo.net",
     {"category": "account", "priority": "low", "summary": "Change the name on my account",
      "customer_email": "yusuf.demir@posteo.net"}),
    ("m", "Subject: Where is my order?\nI ordered a lamp on May 2nd and the tracking hasn't moved in a week. "
          "Medium priority.",
     {"category": "shipping", "priority": "medium", "summary": "Where is my order?"}),
    ("t", "Subject: Refund for cancelled subscription\nI cancelled on March 1st but was charged €9.99 again. "
          "Not urgent. e.dubois@orange.fr",
     {"category": "billing", "priority": "low", "summary": "Refund for cancelled subscription",
      "customer_email": "e.dubois@orange.fr"}),
    ("m", "Subject: Dark mode request\nIt would be nice to have a dark theme someday. Low priority. "
          "kai.tanaka@example.jp",
     {"category": "other", "priority": "low", "summary": "Dark mode request", "customer_email": "kai.tanaka@example.jp"}),
    ("t", "Subject: Data export times out\nExporting more than 10,000 rows gives a timeout error. Medium priority. "
          "Reporter: oluwaseun.a@fintechng.com",
     {"category": "technical", "priority": "medium", "summary": "Data export times out",
      "customer_email": "oluwaseun.a@fintechng.com"}),
    ("m", "Subject: Account locked after travel\nI logged in from Santiago and now my account is locked. I cannot "
          "pay my staff today, urgent!! camila.rojas@gmail.com",
     {"category": "account", "priority": "high", "summary": "Account locked after travel",
      "customer_email": "camila.rojas@gmail.com"}),
    ("t", "Subject: Damaged box on delivery\nThe Ωmega blender arrived in a crushed box with a cracked jar. Please "
          "send a replacement whenever convenient, low priority.",
     {"category": "shipping", "priority": "low", "summary": "Damaged box on delivery"}),
    ("m", "Subject: Invoice address incorrect\nOur invoices still show the old Warsaw address. Please correct it "
          "before month end; normal priority. finance@polbud.pl",
     {"category": "billing", "priority": "medium", "summary": "Invoice address incorrect",
      "customer_email": "finance@polbud.pl"}),
    ("t", "Subject: Question about your office hours\nAre you open on public holidays in Bavaria? Just curious, "
          "low priority.",
     {"category": "other", "priority": "low", "summary": "Question about your office hours"}),
    ("m", "Subject: Checkout page is blank in Safari\nSince this morning the page does not render in Safari 17; "
          "high priority. webmaster@tienda-sol.es",
     {"category": "technical", "priority": "high", "summary": "Checkout page is blank in Safari",
      "customer_email": "webmaster@tienda-sol.es"}),
    ("t", "Subject: Delivered to the wrong address\nThe courier left my parcel at Rua das Flores 12 instead of "
          "number 21. Normal priority. joao.pereira@sapo.pt",
     {"category": "shipping", "priority": "medium", "summary": "Delivered to the wrong address",
      "customer_email": "joao.pereira@sapo.pt"}),
    ("m", "Subject: Discount code not applied\nThe code SPRING25 was not deducted from my total of $84. Low "
          "priority, but please credit it. Sipho Ndlovu, sipho.ndlovu@webmail.co.za",
     {"category": "billing", "priority": "low", "summary": "Discount code not applied",
      "customer_email": "sipho.ndlovu@webmail.co.za"}),
    ("t", "Subject: Feedback on new website\nJust wanted to say the new design looks great. No action needed, "
          "low priority. h.schneider@posteo.de",
     {"category": "other", "priority": "low", "summary": "Feedback on new website",
      "customer_email": "h.schneider@posteo.de"}),
    ("m", "Subject: Add a second admin to our account\nPlease give admin rights to our new manager, Fatima Zahra. "
          "Normal priority. it@omega-systems.gr",
     {"category": "account", "priority": "medium", "summary": "Add a second admin to our account",
      "customer_email": "it@omega-systems.gr"}),
])

CASES: list[Case] = CONTACTS + ORDERS + MEETINGS + ADDRESSES + PRODUCTS + TICKETS
