"""Generate the demo corpus: some 900 messages of realistic, varied mail, deterministically.

The text comes from data/ham.txt, data/spam.txt (templates) and data/lists.txt (names,
sentences, words); this script gives it the headers, routes, MIME shapes, charsets and
dates of real mail.  Both classes go through the same machinery (the same relays, mail
programs, newsletter senders, HTML layout and charsets), so no header or layout marks a
class by itself: the filter has to learn from what the mail says and where it came from.

Usage: ``python sample_corpus/generate.py OUT`` writes OUT/maildir/{ham,spam}/{cur,new,tmp},
OUT/ham.mbox, OUT/spam.mbox, OUT/index (as derive.py derives them) and OUT/unseen/*.eml:
a few messages of each class the demo never learns, to classify.  Standard library only;
the same files come out of every run.

Template text: ``{a|b|c}`` picks one choice (nested allowed); ``$name`` is one pick from
list NAME (or a value made here, see ``Message.slot``) kept for the whole message,
``%name`` a fresh pick each time; ``$name#2`` is the second `` = ``-separated field of
the pick; ``\\$`` is a dollar sign; ``<hidden>..</hidden>`` is text HTML hides.
"""
from __future__ import annotations

import base64
import datetime as dt
import quopri
import random
import re
import struct
import sys
import unicodedata
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import derive

DATA = Path(__file__).resolve().parent / "data"
SEED = 32
HAM, SPAM = 600, 300
START = dt.datetime(2023, 9, 1, tzinfo=dt.UTC)
DAYS = 365
ME = ("Robin", "Alder", "robin@example.com")
WORK = "fennick.example.org"
# Messages the demo classifies after learning the rest: (class, template, file name).
UNSEEN = (
    ("ham", "newsletter_shop", "ham-shop-newsletter"),
    ("ham", "list_post", "ham-list-reply"),
    ("ham", "personal_money", "ham-friend-asks-about-a-loan"),
    ("spam", "phish_parcel", "spam-parcel-phishing"),
    ("spam", "fake_reply", "spam-fake-reply"),
    ("spam", "newsletter_spam", "spam-fake-newsletter"),
)
LANG_TZ = {"en": (0, 0, 0, 60, -300, -420, 330, 600), "de": (60, 120), "fr": (60, 120), "es": (60, 120), "ru": (180,), "ja": (540,), "zh": (480,)}
CHARSETS = {  # (charset, weight) per language; utf-8 whenever the text does not fit
    "en": (("us-ascii", 6), ("utf-8", 3), ("iso-8859-1", 1)),
    "de": (("utf-8", 3), ("iso-8859-1", 2), ("iso-8859-15", 1)),
    "fr": (("utf-8", 3), ("iso-8859-1", 2), ("iso-8859-15", 1)),
    "es": (("utf-8", 3), ("iso-8859-1", 2)),
    "ru": (("utf-8", 2), ("koi8-r", 2), ("windows-1251", 2)),
    "ja": (("iso-2022-jp", 3), ("utf-8", 1)),
    "zh": (("gb2312", 2), ("gbk", 1), ("utf-8", 2)),
}
MAILERS = (  # (header, value, message-id style); people and spammers draw from the same list
    ("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:115.0) Gecko/20100101 Thunderbird/115.6.0", "uuid"),
    ("X-Mailer", "Apple Mail (2.3731.700.6)", "UUID"),
    ("X-Mailer", "iPhone Mail (20H19)", "UUID"),
    ("X-Mailer", "Microsoft Outlook 16.0", "outlook"),
    ("User-Agent", "K-9 Mail for Android", "uuid"),
    ("User-Agent", "Mutt/2.2.9 (2022-11-12)", "mutt"),
    ("User-Agent", "Roundcube Webmail/1.6.5", "hex"),
    ("X-Mailer", "PHPMailer 6.8.1 (https://github.example.com/PHPMailer/PHPMailer)", "hex"),
    ("X-Mailer", "Microsoft Outlook Express 6.00.2900.5512", "oe"),
    ("", "", "hex"),
)
MAILER_WEIGHTS = {"ham": (4, 3, 3, 3, 2, 1, 2, 0.3, 0.3, 2), "spam": (1, 1, 1, 3, 0.5, 0.2, 2, 3, 2, 4)}
PERSONAL_DOMAINS = ("freemail.example.net", "mail.example.org", "post.isp-one.test", "example.net", "kabel-mail.test", "mail.example.net")
SPAM_TLDS = ("test", "test", "invalid", "example.net", "example.com")
HACKED = ("stmarys-school.test", "harbour-hotel.test", "cityplumbing.example.com", "dental-care.test", "old-forum.example.org")
ESP = "mta{}.mailout.example.net"
Template = dict[str, str]


def read_lists() -> dict[str, list[str]]:
    lists: dict[str, list[str]] = {}
    current: list[str] = []
    for line in (DATA / "lists.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("[") and line.endswith("]"):
            current = lists.setdefault(line[1:-1], [])
        elif line.strip() and not line.startswith("#"):
            current.append(line.strip())
    return lists


def read_templates(kind: str) -> dict[str, Template]:
    out: dict[str, Template] = {}
    text = (DATA / f"{kind}.txt").read_text(encoding="utf-8")
    for block in re.split(r"^@ ", text, flags=re.MULTILINE)[1:]:
        name, rest = block.split("\n", 1)
        head, _, body = rest.partition("\n\n")
        keys = dict(line.split(": ", 1) for line in head.splitlines())
        out[name.strip()] = {**keys, "body": body.strip("\n") + "\n"}
    return out


def weighted(rng: random.Random, spec: str) -> str:
    """`a:3 b:1` -> a three times in four."""
    pairs = [item.split(":") for item in spec.split()]
    return rng.choices([p[0] for p in pairs], [float(p[1]) if len(p) > 1 else 1.0 for p in pairs])[0]


def ascii_name(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()


@dataclass
class Person:
    name: str
    first: str
    addr: str
    lang: str
    route: str
    mailer: int
    tz: int


@dataclass
class Message:
    """One message being made: its picks, so that `$name` means one thing throughout."""

    rng: random.Random
    lists: dict[str, list[str]]
    sender: Person
    when: dt.datetime
    kind: str
    cache: dict[str, str] = field(default_factory=dict)
    used: dict[str, set[str]] = field(default_factory=dict)

    def expand(self, text: str, depth: int = 0) -> str:
        choice = re.compile(r"\{([^{}]*)\}")
        while (found := choice.search(text)) is not None:
            text = text[: found.start()] + self.rng.choice(found.group(1).split("|")) + text[found.end() :]
        text = re.sub(r"(?<!\\)([$%])([a-z][a-z0-9_]*)(?:#(\d))?", lambda m: self.value(m.group(1), m.group(2), m.group(3), depth), text)
        return text if depth else text.replace("\\$", "$")

    def value(self, sigil: str, name: str, part: str | None, depth: int) -> str:
        if sigil == "%" or name not in self.cache:
            got = self.slot(name) if name not in self.lists else self.pick(name)
            got = self.expand(got, depth + 1)
            if sigil == "%":
                return got.split(" = ")[int(part or 1) - 1]
            self.cache[name] = got
        return self.cache[name].split(" = ")[int(part or 1) - 1]

    def pick(self, name: str) -> str:
        used = self.used.setdefault(name, set())
        fresh = [item for item in self.lists[name] if item not in used] or self.lists[name]
        item = self.rng.choice(fresh)
        used.add(item)
        return item

    def slot(self, name: str) -> str:
        """A value made here rather than picked from a list."""
        rng, s = self.rng, self.sender
        domain = s.addr.split("@")[1].removeprefix("mail.").removeprefix("email.").removeprefix("news.")
        made: dict[str, Callable[[], str]] = {
            "me": lambda: ME[0], "me_full": lambda: f"{ME[0]} {ME[1]}", "my_addr": lambda: ME[2],
            "sender_first": lambda: s.first, "sender_name": lambda: s.name, "partner": lambda: rng.choice(("Sam", "Jo", "Alex")),
            "quarter": lambda: str(rng.randint(1, 4)), "time": lambda: f"{rng.randint(8, 17)}:{rng.choice(('00', '15', '30', '45'))}",
            "time2": lambda: f"{rng.randint(18, 21)}:00", "small_num": lambda: str(rng.randint(2, 19)), "small_num4": lambda: str(rng.randint(1000, 9999)),
            "num": lambda: str(rng.randint(20, 240)), "big_num": lambda: f"{rng.randint(2, 95) * 1000:,}",
            "price": lambda: str(rng.choice((9, 12, 15, 19, 24, 29, 35, 49, 59, 79, 99, 129, 149, 249))),
            "percent": lambda: str(rng.choice((10, 15, 20, 25, 30, 40, 50, 60, 70, 80))),
            "big_money": lambda: f"{rng.choice(('US$', 'EUR ', 'GBP '))}{rng.randint(2, 40) * 250_000:,}.00",
            "code": lambda: str(rng.randint(100000, 999999)), "order": lambda: f"#{rng.randint(100000, 999999)}",
            "track": lambda: f"{rng.choice(('PN', 'GB', 'JD'))}{rng.randint(10**9, 10**10 - 1)}", "ref": lambda: f"{rng.choice(('INV', 'RA', 'PO'))}-{rng.randint(1000, 99999)}",
            "version": lambda: f"2.{rng.randint(1, 9)}.{rng.randint(0, 4)}", "month_de": lambda: rng.choice(("Januar", "März", "Mai", "Juli", "Oktober")),
            "url": lambda: f"https://click.mailout.example.net/ls/{rng.randint(10**7, 10**8)}" if rng.random() < 0.2 else f"{'http' if rng.random() < 0.15 else 'https'}://{rng.choice(('www.', 'links.', ''))}{domain}",
            "spam_domain": lambda: spam_domain(rng, self.lists), "spam_url": lambda: spam_url(rng, self.lists),
            "quote_date": lambda: f"{self.when - dt.timedelta(hours=rng.randint(2, 90)):%a, %d %b %Y at %H:%M}",
            "spam_addr": lambda: f"{ascii_name(self.pick('first_en'))}{rng.randint(1, 99)}@{rng.choice(('freemail.example.net', spam_domain(rng, self.lists)))}",
            "bank_slug": lambda: ascii_name(self.value("$", "bank", "1", 1).split()[0]),
            "service_slug": lambda: ascii_name(self.value("$", "service", "1", 1)),
        }
        return made[name]()


def spam_domain(rng: random.Random, lists: dict[str, list[str]]) -> str:
    words = lists["lexicon"] + [ascii_name(w) for w in lists["spamword"]]
    name = "-".join(rng.sample(words, rng.choice((1, 2)))) + (str(rng.randint(1, 99)) if rng.random() < 0.3 else "")
    return f"{name}.{rng.choice(SPAM_TLDS)}"


def spam_url(rng: random.Random, lists: dict[str, list[str]]) -> str:
    style = rng.random()
    if style < 0.15:
        return f"https://{rng.choice(HACKED)}/wp-content/{rng.choice(lists['lexicon'])}/{rng.randint(1, 999)}"
    if style < 0.25:
        return f"https://click.mailout.example.net/ls/{rng.randint(10**7, 10**8)}"
    return f"{'http' if rng.random() < 0.35 else 'https'}://{rng.choice(('www.', '', 'secure.'))}{spam_domain(rng, lists)}"


class Corpus:
    def __init__(self) -> None:
        self.rng = random.Random(SEED)
        self.lists = read_lists()
        self.templates = {"ham": read_templates("ham"), "spam": read_templates("spam")}
        self.contacts = [self.person(lang) for lang in ("en",) * 12 + ("de", "de", "de", "fr", "fr", "es", "es", "ru", "ru", "ja", "zh")]
        self.contacts[1].mailer = 8  # an uncle who never changed his mail program
        self.colleagues = [self.person("en", WORK, "corp", 3) for _ in range(8)]
        self.members = [self.person(lang) for lang in ("en",) * 10 + ("de", "fr", "es", "ru")]

    def mailer(self, kind: str) -> int:
        return self.rng.choices(range(len(MAILERS)), MAILER_WEIGHTS[kind])[0]

    def person(self, lang: str, domain: str = "", route: str = "", mailer: int = -1, kind: str = "ham") -> Person:
        rng = self.rng
        first, last = rng.choice(self.lists[f"first_{lang}"]), rng.choice(self.lists[f"last_{lang}"])
        name = f"{last}{first}" if lang in ("ja", "zh") else f"{first} {last}"
        local = ascii_name(f"{first}.{last}") if lang in ("en", "de", "fr", "es") else f"{rng.choice(self.lists['lexicon'])}{rng.randint(1, 99)}"
        domain = domain or rng.choice(PERSONAL_DOMAINS)
        route = route or ("freemail" if domain.startswith("freemail") else rng.choice(("isp", "isp", "home", "webmail")))
        mailer = mailer if mailer >= 0 else 6 if route == "webmail" else self.mailer(kind)
        tz = rng.choice((-420, -300, 0, 60, 180, 330, 480, 540)) if kind == "spam" else rng.choice(LANG_TZ[lang])
        return Person(name, first, f"{local}@{domain}", lang, route, mailer, tz)

    def sender(self, template: Template, kind: str) -> Person:
        rng, who = self.rng, template["from"]
        lang = template.get("lang", "en")
        if who == "contact":  # for spam: their account, taken over
            return rng.choice([p for p in self.contacts if p.lang == lang])
        if who == "colleague":
            return rng.choice(self.colleagues)
        if who == "member":
            return rng.choice(self.members)
        if who == "spammer":
            person = self.person(rng.choice(("en", "en", "es", "fr", "de")), kind="spam")
            domain = rng.choice((rng.choice(PERSONAL_DOMAINS), spam_domain(rng, self.lists), spam_domain(rng, self.lists), rng.choice(HACKED)))
            person.addr = f"{person.addr.split('@')[0]}@{domain}"
            person.lang = lang
            return person
        probe = Message(rng, self.lists, Person("", "", "x@example.com", lang, "", 9, 0), START, kind)
        name, addr = re.fullmatch(r"(.*?) ?<([^>]+)>", probe.expand(who)).groups()  # type: ignore[union-attr]
        mailer = self.mailer(kind) if kind == "spam" else rng.choice((7, 7, 3, 9, 9, 9))  # shops and offices: PHP scripts, Outlook
        return Person(name, name.split()[0], addr.lower(), lang, "", mailer, rng.choice(LANG_TZ[lang]))

    def make(self, kind: str, name: str, when: dt.datetime) -> bytes:
        rng = self.rng
        tpl = self.templates[kind][name]
        sender = self.sender(tpl, kind)
        msg = Message(rng, self.lists, sender, when, kind)
        route = msg.expand(tpl.get("route", "")) or sender.route or "esp"
        if kind == "spam" and route == "freemail":
            sender.addr = sender.addr.split("@")[0] + "@freemail.example.net"
        lang = tpl.get("lang", "en")
        subject = msg.expand(tpl["subject"])
        body = msg.expand(tpl["body"])
        extra: list[tuple[str, str]] = []
        if rng.random() < float(tpl.get("reply", 0)):
            subject = subject if subject.startswith(("Re:", "RE:")) else f"Re: {subject}"
            parent = ""
            if kind == "ham":  # a real thread: quote what the sender answers
                parent = message_id(rng, "uuid", "example.com", when)
                body = self.quoting(msg, body, tpl["from"])
            elif rng.random() < 0.5:
                parent = message_id(rng, "hex", rng.choice(("example.com", spam_domain(rng, self.lists))), when)
            extra += [("In-Reply-To", parent), ("References", parent)] if parent else []
        if tpl["from"] == "colleague" and rng.random() < 0.4:
            extra.append(("Cc", ", ".join(f"{p.name} <{p.addr}>" for p in rng.sample([p for p in self.colleagues if p is not sender], 2))))
        listname = tpl.get("list")
        if listname:
            bare = subject.removeprefix("Re: ")
            subject = f"{'Re: ' if bare != subject else ''}[{listname}] {bare}"
            body += f"\n_______________________________________________\n{listname} mailing list\n{listname}@lists.example.org\nhttps://lists.example.org/mailman/listinfo/{listname}\n"
        return render(rng, msg, tpl, route, lang, subject, body, extra, listname)

    def quoting(self, msg: Message, body: str, who: str) -> str:
        pool = {"member": "dev_en", "colleague": "work_en"}.get(who, f"chat_{msg.sender.lang}")
        them = msg.expand("%first_en") if who == "member" else ME[0]
        before = msg.when - dt.timedelta(hours=self.rng.randint(2, 70))
        quoted = "".join(f"> {msg.expand('%' + pool)}\n" for _ in range(self.rng.randint(1, 3)))
        return f"{body}\nOn {before:%a, %d %b %Y at %H:%M}, {them} wrote:\n{quoted}"


def message_id(rng: random.Random, style: str, domain: str, when: dt.datetime) -> str:
    hexa = "".join(rng.choice("0123456789abcdef") for _ in range(32))
    uuid = f"{hexa[:8]}-{hexa[8:12]}-{hexa[12:16]}-{hexa[16:20]}-{hexa[20:]}"
    local = {
        "uuid": uuid, "UUID": uuid.upper(), "hex": hexa, "mutt": f"{when:%Y%m%d%H%M%S}.{hexa[:6]}",
        "outlook": f"AM{rng.randint(0, 9)}PR0{rng.randint(1, 9)}MB{rng.randint(1000, 9999)}{hexa[:12].upper()}",
        "oe": f"{hexa[:6].upper()}$%{hexa[6:14]}$%{rng.randint(10, 99)}",
        "esp": f"{rng.randint(10**11, 10**12)}.{rng.randint(1000, 9999)}.{hexa[:10]}",
    }[style]
    return f"<{local}@{domain}>"


def date_field(rng: random.Random, when: dt.datetime, minutes: int) -> str:
    local = (when - dt.timedelta(seconds=rng.randint(30, 400))).astimezone(dt.timezone(dt.timedelta(minutes=minutes)))
    sign = "+" if minutes >= 0 else "-"
    return f"{local:%a, %d %b %Y %H:%M:%S} {sign}{abs(minutes) // 60:02d}{abs(minutes) % 60:02d}"


def ip(rng: random.Random, net: str) -> str:
    return f"{net}.{rng.randint(2, 254)}"


def received(rng: random.Random, route: str, sender: Person, when: dt.datetime, listname: str | None, forwarded: bool) -> tuple[list[str], str]:
    """The Received fields, newest first, from the sender's machine to our MX, and the Return-Path."""
    domain = sender.addr.split("@")[1]
    path = sender.addr
    hops: list[tuple[str, str, str, str]] = []  # (helo, rdns, ip, by)
    client = ip(rng, rng.choice(("203.0.113", "198.51.100")))
    if route == "freemail":
        hops = [("", "", client, "webmail.freemail.example.net with HTTP"), ("out.freemail.example.net", "out.freemail.example.net", "198.51.100.5", "")]
    elif route == "isp":
        helo = rng.choice(("laptop", "localhost", f"[{client}]", "macbook.home", f"DESKTOP-{rng.randint(1000, 9999)}"))
        hops = [(helo, rng.choice(("unknown", f"{client.replace('.', '-')}.dyn.example.net")), client, "smtp.isp-one.test (Postfix) with ESMTPSA"), ("smtp.isp-one.test", "smtp.isp-one.test", "198.51.100.10", "")]
    elif route == "home":
        hops = [(f"mail.{domain}", f"mail.{domain}", ip(rng, "198.51.100"), "")]
    elif route == "webmail":
        host = domain if not domain.startswith("freemail") else rng.choice(HACKED)
        hops = [("", "", client, f"webmail.{host} with HTTP"), (f"webmail.{host}", f"webmail.{host}", ip(rng, "198.51.100"), "")]
    elif route == "corp":
        hops = [(f"EXCH0{rng.randint(1, 3)}.{WORK}", "", "192.0.2.200", f"EXCH0{rng.randint(1, 3)}.{WORK} (15.2.1258.12) with Microsoft SMTP Server"), (f"mx-out.{WORK}", f"mx-out.{WORK}", "198.51.100.40", "")]
    elif route == "notify":
        hops = [(f"mailer.{domain.removeprefix('mail.')}", f"mailer.{domain.removeprefix('mail.')}", ip(rng, "198.51.100"), "")]
    elif route == "esp":
        mta = ESP.format(rng.randint(1, 40))
        hops = [(mta, mta, ip(rng, "198.51.100"), "")]
        path = f"bounce-{rng.randint(10**5, 10**6)}-{rng.randint(100, 999)}@mailout.example.net"
    else:  # direct: a machine that talks to our MX itself
        helo = rng.choice(("User", f"[{client}]", f"mail.{domain}", "localhost", f"adsl-{client.replace('.', '-')}.dyn.example.net", domain))
        hops = [(helo, rng.choice(("unknown", f"{client.replace('.', '-')}.dyn.example.net")), client, "")]
    if forwarded:  # sent to the work address, which forwards to this mailbox
        hops += [(f"mx-in.{WORK}", f"mx-in.{WORK}", "198.51.100.41", f"EXCH0{rng.randint(1, 3)}.{WORK} (15.2.1258.12) with Microsoft SMTP Server"), (f"mx-out.{WORK}", f"mx-out.{WORK}", "198.51.100.40", "")]
    if listname:
        hops.append(("lists.example.org", "lists.example.org", "198.51.100.30", ""))
        path = f"{listname}-bounces@lists.example.org"
    fields: list[str] = []
    stamp = when - dt.timedelta(seconds=rng.randint(20, 300))
    for i, (helo, rdns, addr, by) in enumerate(hops):
        stamp += dt.timedelta(seconds=rng.randint(1, 40))
        last = i == len(hops) - 1
        by = "mx1.example.com (Postfix) with ESMTP" + ("S" if rng.random() < 0.7 else "") if last else by
        if helo:
            text = f"from {helo} ({rdns or 'unknown'} [{addr}])\n\tby {by} id {rng.randint(16**9, 16**10):X}"
        else:
            text = f"from [{addr}] by {by}"
        if last:
            text += f"\n\tfor <{ME[2]}>"
        fields.append(f"Received: {text}; {stamp:%a, %d %b %Y %H:%M:%S +0000}")
    fields.append(f"Received: from mx1.example.com (mx1.example.com [192.0.2.25])\n\tby mail.example.com with LMTP id {rng.randint(16**9, 16**10):x}\n\tfor <{ME[2]}>; {when:%a, %d %b %Y %H:%M:%S +0000}")
    return fields[::-1], path


def encoded_word(text: str, charset: str) -> str:
    """An RFC 2047 form of TEXT (as is when ASCII), in words short enough for a folded line."""
    if text.isascii():
        return text
    step = 24 if charset.startswith("iso-8859") or (charset == "utf-8" and sum(ord(c) > 127 for c in text) < len(text) / 3) else 10
    words = []
    for i in range(0, len(text), step):
        data = text[i : i + step].encode(charset)
        words.append(f"=?{charset}?B?{base64.b64encode(data).decode()}?=")
    return "\n ".join(words)


def fits(text: str, charset: str) -> bool:
    try:
        text.encode(charset)
    except UnicodeEncodeError:
        return False
    return True


def html_of(text: str, url: str, styled: bool) -> str:
    """The body as a newsletter-style or plain HTML page: same rules for either class."""
    out = []
    for para in text.strip("\n").split("\n\n"):
        lines = para.split("\n")
        if all(line.startswith("* ") for line in lines):
            out.append("<ul>" + "".join(f"<li>{line[2:]}</li>" for line in lines) + "</ul>")
            continue
        if all(line.startswith(">") for line in lines):
            out.append("<blockquote>" + "<br>".join(line.lstrip("> ") for line in lines) + "</blockquote>")
            continue
        lines = [re.sub(r"^([A-Z][^:<>]{2,30}): (https?://\S+)$", r'<a href="\2" style="color:#1a6fb0">\1</a>', line) for line in lines]
        lines = [re.sub(r"(?<![\"'>])(https?://[^\s<]+)", r'<a href="\1">\1</a>', line) for line in lines]
        out.append("<p>" + "<br>\n".join(lines) + "</p>")
    page = "\n".join(out).replace("<hidden>", '<span style="color:#ffffff;font-size:1px">').replace("</hidden>", "</span>")
    if styled:
        page = (f'<table width="600" align="center" cellpadding="0" cellspacing="0"><tr><td>\n<img src="{url}/img/logo.png" alt="" width="600">\n'
                f"{page}\n</td></tr></table>")
    return f'<!DOCTYPE html>\n<html><head><meta http-equiv="Content-Type" content="text/html; charset=utf-8"></head>\n<body style="font-family:Arial,Helvetica,sans-serif;font-size:14px">\n{page}\n</body></html>\n'


def text_part(rng: random.Random, text: str, subtype: str, lang: str) -> list[str]:
    charsets = [c for c, _ in CHARSETS[lang]]
    charset = rng.choices(charsets, [w for _, w in CHARSETS[lang]])[0]
    charset = charset if fits(text, charset) else "utf-8"
    data = text.encode(charset)
    long_lines = any(len(line) > 76 for line in text.split("\n"))
    if charset == "iso-2022-jp" or (charset == "us-ascii" and not long_lines):
        cte = "7bit"
    elif rng.random() < 0.2 or lang in ("ru", "zh", "ja"):
        cte = rng.choice(("base64", "8bit")) if not long_lines else "base64"
    else:
        cte = "quoted-printable"
    if cte == "base64":
        payload = base64.encodebytes(data.replace(b"\n", b"\r\n")).decode()
    elif cte == "quoted-printable":
        payload = quopri.encodestring(data).decode("ascii")
    else:
        payload = data.decode("ascii", "surrogateescape")  # 8bit: the bytes as they are
    return [f"Content-Type: text/{subtype}; charset=\"{charset}\"", f"Content-Transfer-Encoding: {cte}", "", payload.rstrip("\n")]


def attachment(rng: random.Random, kind: str, msg: Message) -> list[str]:
    if kind in ("ics", "csv"):
        text = ics(rng, msg) if kind == "ics" else "month,budget,actual\n" + "".join(f"{m},{rng.randint(900, 9000)},{rng.randint(900, 9000)}\n" for m in ("Jan", "Feb", "Mar", "Apr"))
        ctype, name = ("text/calendar; method=REQUEST", "invite.ics") if kind == "ics" else ("text/csv", f"figures-q{rng.randint(1, 4)}.csv")
        return [f"Content-Type: {ctype}; charset=\"utf-8\"; name=\"{name}\"", "Content-Transfer-Encoding: 7bit", f"Content-Disposition: attachment; filename=\"{name}\"", "", text.rstrip("\n")]
    if kind == "html":
        ref = msg.expand("$ref")
        text = f'<html><body><form action="{msg.expand("$spam_url")}/pay" method="post"><h2>Invoice {ref}</h2><input name="email"><input name="password" type="password"><button>View document</button></form></body></html>'
        return [f'Content-Type: text/html; name="Invoice_{ref}.html"', "Content-Transfer-Encoding: base64", f'Content-Disposition: attachment; filename="Invoice_{ref}.html"', "", base64.encodebytes(text.encode()).decode().rstrip("\n")]
    names = {"photo": ("image/png", f"IMG_{rng.randint(1000, 9999)}.png"), "pdf": ("application/pdf", rng.choice(("report.pdf", "minutes.pdf", "proposal-v2.pdf", "invoice-0042.pdf"))),
             "zip": ("application/zip", f"Invoice_{msg.expand('$ref')}.zip"), "gif": ("image/gif", f"{msg.expand('%lexicon')}.gif")}
    ctype, name = names[kind]
    data = png(rng) if kind == "photo" else {"pdf": b"%PDF-1.4\n", "zip": b"PK\x03\x04", "gif": b"GIF89a"}[kind] + rng.randbytes(rng.randint(300, 1500))
    return [f'Content-Type: {ctype}; name="{name}"', "Content-Transfer-Encoding: base64", f'Content-Disposition: attachment; filename="{name}"', "", base64.encodebytes(data).decode().rstrip("\n")]


def png(rng: random.Random) -> bytes:
    width, height = rng.randint(12, 24), rng.randint(8, 16)
    rows = b"".join(b"\x00" + rng.randbytes(width * 3) for _ in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def ics(rng: random.Random, msg: Message) -> str:
    start = msg.when + dt.timedelta(days=rng.randint(1, 9))
    return "\n".join(("BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//Microsoft Corporation//Outlook 16.0 MIMEDIR//EN", "METHOD:REQUEST", "BEGIN:VEVENT",
                      f"UID:{rng.randint(10**9, 10**10)}@{WORK}", f"DTSTART:{start:%Y%m%dT%H0000Z}", f"DTEND:{start + dt.timedelta(hours=1):%Y%m%dT%H0000Z}",
                      f"ORGANIZER:mailto:{msg.sender.addr}", f"ATTENDEE:mailto:robin.alder@{WORK}", "SUMMARY:Meeting", "END:VEVENT", "END:VCALENDAR"))


def boundary(rng: random.Random) -> str:
    return rng.choice(("----=_Part_{}_{}.{}", "=_{}{}{}", "000000000000{}{}{}")).format(rng.randint(10**4, 10**5), rng.randint(10**8, 10**9), rng.randint(10**9, 10**10))


def multipart(rng: random.Random, subtype: str, parts: list[list[str]]) -> list[str]:
    mark = boundary(rng)
    lines = [f'Content-Type: multipart/{subtype};\n\tboundary="{mark}"', ""] + (["This is a multi-part message in MIME format."] if rng.random() < 0.3 else [])
    for part in parts:
        lines += [f"--{mark}", *part]
    return [*lines, f"--{mark}--", ""]


def render(rng: random.Random, msg: Message, tpl: Template, route: str, lang: str, subject: str, body: str, extra: list[tuple[str, str]], listname: str | None) -> bytes:
    sender, when, spam = msg.sender, msg.when, msg.kind == "spam"
    to = f"{ME[0]} {ME[1]} <{ME[2]}>"
    work = tpl["from"] == "colleague" or tpl.get("to") == "work" or (spam and rng.random() < 0.15)
    to = f"{ME[0]} {ME[1]} <robin.alder@{WORK}>" if work else to
    fields, path = received(rng, route, sender, when, listname, work and tpl["from"] != "colleague")
    header_charset = "utf-8" if lang == "en" else next(c for c, _ in CHARSETS[lang])
    header_charset = header_charset if fits(subject + sender.name, header_charset) else "utf-8"
    to = f"{listname}@lists.example.org" if listname else to if tpl.get("to", "work") == "work" else tpl["to"]
    if spam and rng.random() < 0.25:
        to = rng.choice(("undisclosed-recipients:;", f"<{ME[2]}>", f"robin.alder@{WORK}", ME[2]))
    header, mailer, style = MAILERS[sender.mailer]
    style = "esp" if route == "esp" else style
    domain = sender.addr.split("@")[1]
    head = [f"Return-Path: <{path}>", f"Delivered-To: {ME[2]}", *fields]
    origin = [("Date", date_field(rng, when, sender.tz)), ("From", f"{encoded_word(sender.name, header_charset)} <{sender.addr}>" if sender.name else sender.addr),
              ("To", to), ("Subject", encoded_word(subject, header_charset))]
    if not (spam and rng.random() < 0.08):
        origin.append(("Message-ID", message_id(rng, style, domain if route != "corp" else WORK, when)))
    origin += extra
    if spam and "reply_to" in tpl and rng.random() < float(tpl["reply_to"]):
        origin.append(("Reply-To", msg.expand("$spam_addr")))
    if header and route != "esp":
        origin.append((header, mailer))
    if route in ("esp", "notify", "freemail", "corp") and rng.random() < 0.9:
        origin.insert(0, ("DKIM-Signature", f"v=1; a=rsa-sha256; c=relaxed/relaxed; d={domain.removeprefix('mail.')};\n\ts={rng.choice(('s1', 'selector1', 'mail', 'k1'))}; h=from:to:subject:date:message-id;\n\tbh={base64.b64encode(rng.randbytes(32)).decode()};\n\tb={base64.b64encode(rng.randbytes(48)).decode()}"))
    if route == "esp":
        origin += [("List-Unsubscribe", f"<https://click.mailout.example.net/unsub/{rng.randint(10**7, 10**8)}>"), ("Feedback-ID", f"{rng.randint(100, 999)}:{rng.randint(10**4, 10**5)}:mailout")]
    if listname:
        origin += [("Sender", f'"{listname}" <{listname}-bounces@lists.example.org>'), ("List-Id", f"<{listname}.lists.example.org>"), ("List-Post", f"<mailto:{listname}@lists.example.org>"),
                   ("List-Unsubscribe", f"<https://lists.example.org/mailman/options/{listname}>,\n <mailto:{listname}-request@lists.example.org?subject=unsubscribe>"), ("Precedence", "list")]
    head += [f"{name}: {value}" for name, value in origin]
    shape = weighted(rng, tpl.get("shape", "plain"))
    url = f"https://www.{domain.removeprefix('mail.')}"
    styled = route in ("esp", "notify")
    plain = re.sub(r"</?hidden>", "", body)
    if shape == "plain":
        parts = [text_part(rng, plain, "plain", lang)]
    elif shape == "html":
        parts = [text_part(rng, html_of(body, url, styled), "html", lang)]
    else:
        parts = [multipart(rng, "alternative", [text_part(rng, plain, "plain", lang), text_part(rng, html_of(body, url, styled), "html", lang)])]
    for spec in tpl.get("attach", "").split():
        kind, chance = spec.split(":")
        if rng.random() < float(chance):
            parts.append(attachment(rng, kind, msg))
    content = parts[0] if len(parts) == 1 else multipart(rng, "mixed", parts)
    text = "\n".join([*head, "MIME-Version: 1.0", *content]).rstrip("\n") + "\n"
    return text.encode("ascii", "surrogateescape")


def generate(out: Path) -> tuple[int, int]:
    corpus = Corpus()
    rng = corpus.rng
    jobs = [(kind, name) for kind, count in (("ham", HAM), ("spam", SPAM)) for name in rng.choices(list(corpus.templates[kind]), [float(t["weight"]) for t in corpus.templates[kind].values()], k=count)]
    stamps = sorted(START + dt.timedelta(seconds=rng.randrange(DAYS * 86400)) for _ in jobs)
    rng.shuffle(jobs)
    for sub in ("cur", "new", "tmp"):
        for kind in ("ham", "spam"):
            (out / "maildir" / kind / sub).mkdir(parents=True, exist_ok=True)
    for (kind, name), when in zip(jobs, stamps, strict=True):
        data = corpus.make(kind, name, when)
        unread = rng.random() < 0.08
        flags = "" if unread else ":2," + (rng.choice(("S", "S", "RS", "FS")) if kind == "ham" else rng.choice(("S", "")))
        filename = f"{int(when.timestamp())}.M{rng.randint(10**5, 10**6)}P{rng.randint(1000, 60000)}.mail.example.com,S={len(data)}{flags}"
        (out / "maildir" / kind / ("new" if unread else "cur") / filename).write_bytes(data)
    derive.write(out)
    (out / "unseen").mkdir(exist_ok=True)
    later = START + dt.timedelta(days=DAYS + 1)
    for i, (kind, name, filename) in enumerate(UNSEEN):
        (out / "unseen" / f"{filename}.eml").write_bytes(corpus.make(kind, name, later + dt.timedelta(hours=3 * i, seconds=rng.randrange(9000))))
    return HAM, SPAM


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python sample_corpus/generate.py OUT", file=sys.stderr)
        return 2
    out = Path(argv[0])
    if out.exists() and any(out.iterdir()):
        print(f"{out} is not empty: give a new folder", file=sys.stderr)
        return 2
    ham, spam = generate(out)
    print(f"{out}: {ham} ham and {spam} spam in maildir/, ham.mbox, spam.mbox and index; {len(UNSEEN)} unseen messages in unseen/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
