"""`make deploy`: a first deployment that asks only what it cannot default.

Asks for (or takes as flags) the sender, the stack name and region, how the
sender authenticates, the destination and its credentials, and an e-mail
address for alarms. Creates the Secrets Manager secrets from values typed
at a hidden prompt (or read from the environment), builds and deploys with
SAM, saves the answers in samconfig.toml under a config environment named
after the stack (ARNs, never a secret value; comments and other stacks'
answers kept), stores the routes file (routes.toml, or --routes) in the
stack as `receipts routes apply` does, after checking it before anything is
asked or deployed, prints what to paste into the sender, and runs the smoke
test.

Run with the SAM virtualenv's Python (boto3 and tomlkit come with
aws-sam-cli): scripts/deploy.sh does. Only the standard library is imported
before the flags are read, so `--help` works with any Python 3.
"""

from __future__ import annotations

import argparse
import base64
import getpass
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# How Static Forms can prove itself. Its documentation gives a URL only (a
# token in it); a header works where the plan's webhook settings offer
# headers. Both deploy IDEMPOTENCY_KEY=derive: the header is checked when
# present and the key derived from the body when not.
AUTH_MODES = {"url": "query:token", "header": "bearer"}
# The senders and destinations, with what each asks, as the Rust catalog
# declares them (shared::catalog): a release folder's own catalog.json
# (--release), else the one make deploy writes from this checkout
# (`cargo run -p shared --bin catalog > .tools/catalog.json`). Never kept in
# git, and no list of kinds is kept here. Read before the flags are, since
# they come from it; --preflight needs none.


def catalog_file(argv: list[str]) -> Path:
    for n, arg in enumerate(argv):
        if arg == "--release" and n + 1 < len(argv):
            return Path(argv[n + 1]) / "catalog.json"
        if arg.startswith("--release="):
            return Path(arg.split("=", 1)[1]) / "catalog.json"
    return ROOT / ".tools" / "catalog.json"


CATALOG_FILE = catalog_file(sys.argv[1:])
CATALOG = (json.loads(CATALOG_FILE.read_text()) if CATALOG_FILE.is_file()
           else {"senders": [], "destinations": []})
# Who sends the submissions (the template's Sender). Static Forms is asked
# how it authenticates; the others sign with their own scheme, so the
# stack's default needs no question (docs/senders/).
SENDERS = [sender["name"] for sender in CATALOG["senders"]]


def posted_by_browser(sender: str) -> bool:
    """Whether a visitor's browser posts this sender's forms (its profile's
    `browser`): its pages' origins, a thank-you page and a Turnstile secret
    are asked instead of a webhook secret."""
    return any(s["name"] == sender and s.get("browser") for s in CATALOG["senders"])


def sender_setup(sender: str, url: str) -> str:
    """Where to paste the webhook URL, from the sender's own descriptor
    (its catalog entry's webhook_settings): a new sender needs no line here."""
    entry = next(s for s in CATALOG["senders"] if s["name"] == sender)
    if entry.get("browser"):
        # The user's own page posts it: no secret (its origin and Turnstile prove it).
        return (f'In {entry["webhook_settings"]}: <form action="{url}" method="post">, '
                "with your Turnstile site key in its widget")
    if not entry.get("signs"):
        # It signs nothing: the stack's secret rides in the URL (query:token).
        return f"In {entry['webhook_settings']}: the webhook URL {url}?token=<the secret>"
    signed = " (its signing key is the one you stored)" if entry.get("key_chosen_by_sender") else ""
    return f"In {entry['webhook_settings']}: the webhook URL {url}{signed}"


# Senders whose signing key exists only once their webhook, and so the URL,
# does: the stack starts with a placeholder secret, and the key is stored
# after the deploy (its environment variable, or asked). Webflow's only for
# a webhook made with a site token (--webflow-webhook api).
KEY_AFTER_DEPLOY = {
    "webflow": {"variable": "WEBFLOW_WEBHOOK_SECRET", "title": "Webflow", "label": "Webflow secretKey",
                "create": "Create the webhook with your site token: POST /v2/sites/<site_id>/webhooks, "
                          "triggerType form_submission, url {url}",
                "ask": "Webflow's answer holds secretKey, the key that signs its deliveries",
                "later": "Then put its secretKey into the secret {name}: make deploy ARGS=\"... --webflow-webhook api\" "
                         "with WEBFLOW_WEBHOOK_SECRET set, or the Secrets Manager console."},
    "formspree": {"variable": "FORMSPREE_SIGNING_SECRET", "title": "Formspree", "label": "Formspree signing secret",
                  "create": "In Formspree: the form > Plugins > Webhook: URL {url}, then open the webhook's "
                            "settings for its signing secret",
                  "ask": "Formspree's signing secret, shown once the webhook exists",
                  "later": "Then put Formspree's signing secret into the secret {name}: make deploy "
                           "ARGS=\"... --sender formspree\" with FORMSPREE_SIGNING_SECRET set, or the Secrets "
                           "Manager console."},
}
# Webflow's three kinds of webhook (docs/senders/webflow.md): made in the
# dashboard (unsigned: a token in the URL), through the API with a site token
# (signed with a key Webflow returns only once the webhook, and so the URL,
# exists: stored after the deploy), or by an OAuth app (signed with the app's
# client secret, known before).
WEBFLOW_WEBHOOKS = ["dashboard", "api", "app"]
# Senders whose own list of submissions the stack can audit
# (docs/operations.md, "Submissions the sender never delivered"), and the
# token each needs.
AUDITED_SENDERS = {s["name"]: s["audit_token"] for s in CATALOG["senders"] if s["audit_token"]}
FORM_IDS = re.compile(r"^[A-Za-z0-9_-]{1,64}(,[A-Za-z0-9_-]{1,64})*$")
DESTINATION = {destination["name"]: destination for destination in CATALOG["destinations"]}
DESTINATIONS = list(DESTINATION)
# Destinations whose FieldMap the template reads.
MAPPED_DESTINATIONS = [name for name, d in DESTINATION.items() if d["maps_fields"]]
REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9]$")
# The secrets of the senders' side, by template parameter; each
# destination's come from the catalog.
SENDER_SECRET_NAMES = {"WebhookSecretArn": "webflow-signing-key", "SenderApiTokenSecretArn": "sender-api-token",
                       "NotifyUrlSecretArn": "notify-url", "TurnstileSecretArn": "turnstile-secret"}
ORIGIN = re.compile(r"^(https://[A-Za-z0-9.-]+(:[0-9]{1,5})?|http://(localhost|127\.0\.0\.1)(:[0-9]{1,5})?)/?$")
STACK_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,127}$")
EMAIL = re.compile(r"^[^\s@]+@[^\s@]+$")


class Refused(Exception):
    """A problem the user fixes; printed as one line."""


def say(text: str = "") -> None:
    print(text, flush=True)


class Asker:
    """Questions on a terminal; from standard input when it is not one (CI,
    tests), where a missing answer is an error naming what to give."""

    def __init__(self, stdin=sys.stdin):
        self.stdin = stdin
        self.interactive = stdin.isatty()
        self.asked = 0

    def _line(self, prompt: str, hidden: bool, give: str) -> str:
        self.asked += 1
        if self.interactive:
            return getpass.getpass(prompt) if hidden else input(prompt)
        print(prompt, flush=True)
        line = self.stdin.readline()
        if not line:
            raise Refused(f"no answer to {prompt.strip().rstrip(':')!r} on standard input: {give}")
        return line.rstrip("\n")

    def ask(self, why: str, prompt: str, default: str = "", check=None, hidden=False, give="") -> str:
        """`give` says how to answer without a terminal: the flag, or for a
        secret the variable (secrets are never flags)."""
        say(f"  {why}")
        suffix = f" [{default}]" if default else ""
        while True:
            answer = self._line(f"{prompt}{suffix}: ", hidden, give or "answer it on standard input").strip() or default
            problem = check(answer) if check else None
            if not problem:
                return answer
            if not self.interactive:
                raise Refused(f"{prompt}: {problem}")
            say(f"  {problem}")


@dataclass
class Answers:
    stack_name: str = ""
    region: str = ""
    sender: str = "staticforms"
    auth: str = ""
    webflow_webhook: str = ""
    field_map: str = ""
    destination: str = ""
    alarm_email: str = ""
    audit_forms: str = ""
    # The destination's asked parameters (CrmUrl, SalesforceLoginUrl, ...).
    asked: dict[str, str] = field(default_factory=dict)
    architecture: str = "arm64"
    observability: str = "lean"
    # Secret ARNs (existing, or created from the values below).
    secret_arns: dict[str, str] = field(default_factory=dict)
    # Secret values: sent to Secrets Manager, never written or printed.
    secret_values: dict[str, str] = field(default_factory=dict)


def one_of(options):
    """A check of a name, in any case (Tally, tally)."""
    return lambda answer: None if answer.lower() in options else f"{answer!r} is not one of {', '.join(options)}"


def check_origins(answer):
    origins = [o.strip() for o in answer.split(",") if o.strip()]
    if not origins:
        return "give at least one page origin: https://example.com"
    bad = [o for o in origins if not ORIGIN.match(o)]
    return f"{bad[0]} is no page origin: https://host[:port], nothing after it" if bad else None


def html_form(a: "Answers", args, asker: "Asker") -> None:
    """A plain HTML form posts from the user's own pages: which may post,
    where the visitor goes next, and the Turnstile widget's secret."""
    a.asked["AllowedOrigins"] = ",".join(o.strip().rstrip("/") for o in (args.allowed_origins or asker.ask(
        "The pages whose form posts here, by origin (scheme and host), comma-separated: "
        "a post from any other page is refused.",
        "Allowed origins", "", check_origins, give="give --allowed-origins")).split(",") if o.strip())
    if check_origins(a.asked["AllowedOrigins"]):
        raise Refused(f"--allowed-origins: {check_origins(a.asked['AllowedOrigins'])}")
    allowed = a.asked["AllowedOrigins"].split(",")
    on_page = lambda url: None if not url or any(url.startswith(o + "/") for o in allowed) else \
        "an https address on one of the allowed origins (never another site)"
    thanks = args.thank_you_url if args.thank_you_url is not None else asker.ask(
        "Where the visitor goes once the form is stored, on one of those pages (empty: a short text answer).",
        "Thank-you page", "", on_page, give="give --thank-you-url (or --thank-you-url= for none)")
    if on_page(thanks):
        raise Refused(f"--thank-you-url: {on_page(thanks)}")
    if thanks:
        a.asked["ThankYouUrl"] = thanks
    secret(a, asker, "TurnstileSecretArn", args.turnstile_secret_arn, [(
        "TURNSTILE_SECRET",
        "The Cloudflare Turnstile widget's secret key (Cloudflare dashboard > Turnstile > the widget > "
        "Settings); stored in Secrets Manager. Its site key goes into your page (docs/senders/html.md).",
        "Turnstile secret key", None)], "--turnstile-secret-arn")


def check_destinations(answer):
    """One destination or several, comma-separated, each known and named
    once (the worker refuses a name twice; CloudFormation's rules cannot
    compare a list's items)."""
    names = [name.strip().lower() for name in answer.split(",")]
    for name in names:
        if name not in DESTINATIONS:
            return f"{name!r} is not one of {', '.join(DESTINATIONS)}"
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        return f"{', '.join(twice)} is named twice: each destination at most once"
    return None


def destinations_of(a) -> list[str]:
    """The chosen destinations, in the order given (the first keeps the
    stack's gate key)."""
    return [name.strip().lower() for name in a.destination.split(",")]


def check_stack(name):
    return None if STACK_NAME.match(name) else "a letter, then letters, digits or -, at most 128"


def check_region(name):
    return None if REGION.match(name) else "a region name such as eu-west-1"


def check_email(address):
    return None if not address or EMAIL.match(address) else "an e-mail address, or nothing"


def check_https(url):
    return None if url.startswith("https://") else "an https:// URL"


def check_crm_url(url):
    if not url.startswith("https://"):
        return "an https:// URL"
    return None if url.count("{externalId}") == 1 else "put {externalId} exactly once where the submission id goes"


PROPERTY_NAME = re.compile(r"^[A-Za-z0-9_]{1,100}$")


def check_email_or_property(answer):
    return None if PROPERTY_NAME.match(answer) else "email, or a property's internal name (letters, digits, _)"


IDENTIFIER = re.compile(r"^[A-Za-z0-9]{1,64}$")


def check_identifier(answer):
    return None if IDENTIFIER.match(answer) else "an id of letters and digits"


# The checks the catalog names for an asked value.
CHECKS = {"https": check_https, "upsert_url": check_crm_url, "email_or_property": check_email_or_property,
          "identifier": check_identifier}


def gather(args, asker: Asker, routes=None) -> Answers:
    """The answers: each flag given is taken, each one missing is asked."""
    a = Answers(architecture=args.architecture, observability=args.observability)
    a.sender = args.sender or asker.ask(
        "Who sends the form submissions: " + ", ".join(SENDERS) + ".",
        "Sender", "staticforms", one_of(SENDERS), give="give --sender").lower()
    a.stack_name = args.stack_name or asker.ask(
        "The CloudFormation stack's name (several stacks can live in one account).",
        "Stack name", "staticforms-crm", check_stack, give="give --stack-name")
    a.region = args.region or asker.ask(
        "The AWS region to deploy into.", "Region", default_region(), check_region, give="give --region")
    for problem in (one_of(SENDERS)(a.sender), check_region(a.region)):
        if problem:
            raise Refused(problem)
    if a.sender == "webflow":
        a.webflow_webhook = args.webflow_webhook or asker.ask(
            "How you create the Webflow webhook: dashboard (Site settings > Apps & Integrations > "
            "Webhooks; unsigned, so a token in the URL), api (with a site token; Webflow gives its "
            "signing key after the URL exists, asked after the deploy) or app (your OAuth app's "
            "client secret signs it).",
            "Webflow webhook (dashboard/api/app)", "dashboard", one_of(WEBFLOW_WEBHOOKS),
            give="give --webflow-webhook").lower()
        if one_of(WEBFLOW_WEBHOOKS)(a.webflow_webhook):
            raise Refused(f"--webflow-webhook: {one_of(WEBFLOW_WEBHOOKS)(a.webflow_webhook)}")
    elif args.webflow_webhook:
        raise Refused(f"--webflow-webhook is Webflow's choice, not {a.sender}'s")
    if posted_by_browser(a.sender):
        html_form(a, args, asker)
    else:
        for flag in ("allowed_origins", "thank_you_url", "turnstile_secret_arn"):
            if getattr(args, flag):
                raise Refused(f"--{flag.replace('_', '-')} is a browser form's (html), not {a.sender}'s")
    if a.sender == "staticforms":
        a.auth = args.auth or asker.ask(
            "How Static Forms proves itself: url (a secret token in the webhook URL, as Static "
            "Forms documents) or header (Authorization: Bearer, where your plan offers headers).",
            "Authentication (url/header)", "url", one_of(AUTH_MODES), give="give --auth").lower()
    elif args.auth:
        raise Refused(f"--auth is Static Forms' choice; {a.sender} signs its deliveries itself")
    a.destination = args.destination or asker.ask(
        "Where leads go: " + ", ".join(f"{name} ({d['summary']})" for name, d in DESTINATION.items())
        + ". One, or several comma-separated (hubspot,mailchimp): the routes file chooses each form's.",
        "Destination", "dynamodb", check_destinations, give="give --destination")
    auth_problem = one_of(AUTH_MODES)(a.auth) if a.sender == "staticforms" else None
    for problem in (check_stack(a.stack_name), auth_problem, check_destinations(a.destination)):
        if problem:
            raise Refused(problem)
    a.destination = ",".join(destinations_of(a))
    if args.field_map:
        mapped = [name for name in destinations_of(a) if name in MAPPED_DESTINATIONS]
        if not mapped:
            raise Refused(f"--field-map applies to {' and '.join(MAPPED_DESTINATIONS)}, not {a.destination}")
        if len(mapped) > 1:
            raise Refused(f"--field-map is one map for {' and '.join(mapped)}, whose fields differ: map each "
                          "form's fields in the routes file instead (docs/routes.md)")
        a.field_map = read_field_map(args.field_map)
    if a.sender == "webflow" and a.webflow_webhook == "app":
        # The app's client secret signs, so the stack cannot generate it.
        secret(a, asker, "WebhookSecretArn", args.webhook_secret_arn, [
            ("WEBFLOW_WEBHOOK_SECRET", "Webflow's signing key: the webhook's secretKey (site token) or your "
             "OAuth app's client secret; stored in Secrets Manager.", "Webflow signing key", None),
        ], "--webhook-secret-arn")
    ask_destination(a, args, asker)
    if args.alarm_email is not None:
        a.alarm_email = args.alarm_email
    else:
        a.alarm_email = asker.ask(
            "An e-mail address told when an alarm fires (empty: none; you confirm a mail from AWS first).",
            "Alarm e-mail", "", check_email, give="give --alarm-email (--alarm-email= for none)")
    if check_email(a.alarm_email):
        raise Refused(f"--alarm-email: {check_email(a.alarm_email)}")
    offer_audit(a, args, asker, routes)
    offer_notice(a, args, asker)
    return a


def offer_notice(a: Answers, args, asker: Asker) -> None:
    """The new-lead notice: offered at a terminal, taken from
    --notify-url-secret-arn or NOTIFY_URL otherwise; the URL is a secret
    (a Slack webhook's URL posts to its channel)."""
    if args.no_notice:
        if args.notify_url_secret_arn or os.environ.get("NOTIFY_URL"):
            raise Refused("--no-notice, and yet a notice URL is given: choose one")
        return
    if not (args.notify_url_secret_arn or os.environ.get("NOTIFY_URL") or asker.interactive):
        return
    secret(a, asker, "NotifyUrlSecretArn", args.notify_url_secret_arn, [
        ("NOTIFY_URL", "A notice of each new lead (its form, time and CRM record; no personal data) to a Slack "
         "or Teams incoming webhook, or any https URL taking a JSON POST; stored in Secrets Manager "
         "(empty: none; docs/operations.md#new-lead-notices).", "Notice URL", None),
    ], "--notify-url-secret-arn", optional=True)
    url = a.secret_values.get("NotifyUrlSecretArn")
    if url and check_https(url):
        raise Refused(f"Notice URL: {check_https(url)}")


def offer_audit(a: Answers, args, asker: Asker, routes) -> None:
    """The scheduled audit, for a sender that keeps its submissions: offered
    at a terminal, taken from --sender-api-token-secret-arn or
    SENDER_API_TOKEN otherwise. Its forms: the routes file's, else asked."""
    given = args.sender_api_token_secret_arn or os.environ.get("SENDER_API_TOKEN")
    if a.sender not in AUDITED_SENDERS:
        if args.sender_api_token_secret_arn or args.audit_forms:
            raise Refused(f"the audit reads the own list of submissions of {', '.join(AUDITED_SENDERS)}, not {a.sender}'s")
        return
    if args.no_audit or not (given or asker.interactive):
        return
    secret(a, asker, "SenderApiTokenSecretArn", args.sender_api_token_secret_arn, [
        ("SENDER_API_TOKEN", f"A daily audit finds submissions the stack never received and alarms: it needs "
         f"{AUDITED_SENDERS[a.sender]}; stored in Secrets Manager (empty: no audit; "
         f"docs/senders/{a.sender}.md#audit).", "Sender API token", None),
    ], "--sender-api-token-secret-arn", optional=True)
    if "SenderApiTokenSecretArn" not in a.secret_arns and "SenderApiTokenSecretArn" not in a.secret_values:
        return
    if routes is not None and not args.audit_forms:
        return
    check = lambda forms: None if FORM_IDS.match(forms) else "form ids (letters, digits, - and _), comma-separated"
    a.audit_forms = args.audit_forms or asker.ask(
        "The forms to audit: their ids at the sender (in each form's URL), comma-separated.", "Form ids", "", check,
        give="give --audit-forms")
    if check(a.audit_forms):
        raise Refused(f"--audit-forms: {check(a.audit_forms)}")


def flag_value(args, flag: str):
    """The value of a flag the catalog names (`--crm-url`)."""
    return getattr(args, flag.removeprefix("--").replace("-", "_"), None)


def ask_destination(a: Answers, args, asker: Asker) -> None:
    """What each chosen destination needs, as its catalog entry says: each
    asked parameter (a flag, else a question) and each secret (an existing
    one's ARN as a flag, else its values from the environment or a hidden
    prompt). A flag of a destination not chosen is refused."""
    chosen = destinations_of(a)
    for name, other in DESTINATION.items():
        if name in chosen:
            continue
        flags = [asked["flag"] for asked in other["asked"]] + [s["flag"] for s in other["secrets"]]
        flags += [f"--no-{s['name']}" for s in other["secrets"] if s["optional"]]
        for flag in flags:
            if flag_value(args, flag):
                raise Refused(f"{flag} applies to the {name} destination, not {a.destination}")
    for name in chosen:
        ask_one_destination(a, args, asker, DESTINATION[name])


def ask_one_destination(a: Answers, args, asker: Asker, chosen) -> None:
    """`ask_destination` for one of the chosen."""
    for asked in chosen["asked"]:
        check = CHECKS[asked["check"]]
        default = asked["default"] or ""
        value = flag_value(args, asked["flag"])
        if not value and default and not asker.interactive:
            value = default  # without a terminal, a question with a default is not asked
        value = value or asker.ask(asked["why"], asked["prompt"], default, check, give=f"give {asked['flag']}")
        if check(value):
            raise Refused(f"{asked['flag']}: {check(value)}")
        if value != default:  # the template's default needs no override
            a.asked[asked["parameter"]] = value
    for stored in chosen["secrets"]:
        existing = flag_value(args, stored["flag"])
        parts = [(v["variable"], v["why"], v["prompt"], v["key"]) for v in stored["values"]]
        if stored["optional"] and flag_value(args, f"--no-{stored['name']}"):
            if existing or any(os.environ.get(v["variable"]) for v in stored["values"]):
                raise Refused(f"--no-{stored['name']}, and yet a {stored['values'][0]['prompt']} is given: "
                              "choose one")
            continue
        secret(a, asker, stored["parameter"], existing, parts, stored["flag"], optional=stored["optional"])


def secret(a: Answers, asker: Asker, parameter: str, existing_arn, parts, flag: str, optional=False):
    """An existing secret's ARN, or the values of a new one: from the
    environment, else a hidden prompt. Several values are stored as one
    JSON object, each under its key; one value is the secret whole."""
    if existing_arn:
        a.secret_arns[parameter] = existing_arn
        return
    values = {}
    for variable, why, prompt, key in parts:
        give = f"set {variable}, or give an existing secret's ARN with {flag} (secrets are never flags)"
        value = os.environ.get(variable) or asker.ask(why, prompt, "", hidden=True, give=give)
        if not value and not optional:
            raise Refused(f"{prompt} is required: type it, {give}")
        values[key or variable] = value
    if any(values.values()):
        keyed = all(key for *_, key in parts)
        a.secret_values[parameter] = json.dumps(values) if keyed else next(iter(values.values()))


# Where the credential checks call: the CRMs' own hosts, or (tests only) a
# local stand-in for both.
CHECK_URL = "DEPLOY_CREDENTIAL_CHECK_URL"


def _call(request) -> tuple[int, dict]:
    import urllib.error
    import urllib.request
    try:
        with urllib.request.urlopen(request, timeout=15) as response:
            # Only a refusal's code is kept from a 2xx (Zoho refuses a grant
            # with 200 and an error): a success's body may hold a token.
            try:
                body = json.loads(response.read(65536) or b"{}")
            except ValueError:
                body = {}
            error = body.get("error") if isinstance(body, dict) else None
            return response.status, ({"error": error} if isinstance(error, str) else {})
    except urllib.error.HTTPError as error:
        try:
            return error.code, json.loads(error.read() or b"{}")
        except ValueError:
            return error.code, {}


def check_credentials(a: Answers) -> None:
    """One call with each CRM credential typed or given, before it is
    stored: a wrong one is said now, in one line, not after the deploy.
    Which call is the destination's own (its secret's `check` in the
    catalog): a read any valid token may make (with it in a header, or as
    HTTP Basic's password), or an OAuth token request."""
    override = os.environ.get(CHECK_URL, "").rstrip("/")
    for name in destinations_of(a):
        check_one_destination(a, DESTINATION[name], override)


def check_one_destination(a: Answers, chosen, override: str) -> None:
    """`check_credentials` for one of the chosen."""
    import urllib.parse
    import urllib.request
    for secret in chosen["secrets"]:
        value = a.secret_values.get(secret["parameter"])
        check = secret.get("check")
        if not value or not check:
            continue
        call = check["call"]
        if "read" in call:
            read = call["read"]
            base = override or read["base"]
            request = urllib.request.Request(f"{base}{read['path']}",
                                             headers={read["header"]: f"{read['prefix']}{value}"})
        elif "basic_read" in call:
            read = call["basic_read"]
            base = override or read["base"].replace("{dc}", value.rsplit("-", 1)[-1])
            basic = base64.b64encode(f"staticforms-to-crm:{value}".encode()).decode()
            request = urllib.request.Request(f"{base}{read['path']}", headers={"Authorization": f"Basic {basic}"})
        else:
            grant = call["grant"]
            base = override or a.asked.get(grant["base_parameter"], "").rstrip("/")
            body = urllib.parse.urlencode({"grant_type": grant["grant_type"], **json.loads(value)}).encode()
            request = urllib.request.Request(f"{base}{grant['path']}", data=body, method="POST")
        verdict(*_checked(request), chosen["title"], check["what"], check["expected"])


def _checked(request) -> tuple[int | None, str]:
    try:
        status, body = _call(request)
        return status, str(body.get("error") or body.get("category") or "")
    except OSError as error:
        return None, str(getattr(error, "reason", error))


def verdict(status, code, crm: str, what: str, expected: str) -> None:
    # An answer's `error` is a refusal whatever its status (Zoho refuses a
    # grant with 200); HubSpot's `category` only comes with one.
    if status is not None and 200 <= status < 300 and not code:
        say(f"  {crm} accepted {what}.")
    elif status in (400, 401, 403) or (status is not None and 200 <= status < 300):
        detail = f", {code}" if code else ""
        raise Refused(f"{crm} refused {what} (HTTP {status}{detail}): give {expected}; nothing was stored")
    else:
        said = f"HTTP {status}" if status is not None else code
        say(f"  {crm} could not check {what} ({said}); deploying anyway: the smoke test will tell.")


def read_field_map(path) -> str:
    """`--field-map FILE`: a JSON object from CRM property to form field
    (a text each), as one compact line for the FieldMap parameter."""
    try:
        value = json.loads(Path(path).read_text())
    except OSError as error:
        raise Refused(f"--field-map: cannot read {path}: {error.strerror}") from None
    except ValueError as error:
        raise Refused(f"--field-map: {path} is not JSON ({error.msg}, line {error.lineno})") from None
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise Refused(f"--field-map: {path} must be a JSON object of property names to form field names")
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def sam_quoted(value: str) -> str:
    """A parameter value as SAM's --parameter-overrides reads it back whole:
    unquoted, it cuts {"a":"b"} at the first quote."""
    if "'" not in value:
        return f"'{value}'"
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def default_region() -> str:
    try:
        import boto3
        return boto3.session.Session().region_name or "us-east-1"
    except Exception:
        return "us-east-1"


NO_CREDENTIALS = "no AWS credentials: run `aws configure` (or set AWS_PROFILE / AWS_ACCESS_KEY_ID)"


def credentials_in_sight() -> bool:
    """Whether AWS credentials can be found, by the standard library alone
    (before boto3 is installed): the variables, a profile in the shared
    files, or the instance's metadata service. boto3 confirms later."""
    env = os.environ
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        return True
    if any(env.get(name) for name in ("AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                                       "AWS_CONTAINER_CREDENTIALS_FULL_URI")):
        return True
    import configparser
    profile = env.get("AWS_PROFILE") or env.get("AWS_DEFAULT_PROFILE") or "default"
    aws = Path.home() / ".aws"
    for path, section in [(env.get("AWS_SHARED_CREDENTIALS_FILE") or aws / "credentials", profile),
                          (env.get("AWS_CONFIG_FILE") or aws / "config",
                           profile if profile == "default" else f"profile {profile}")]:
        parser = configparser.RawConfigParser()
        try:
            parser.read(path)
        except (OSError, configparser.Error):
            continue
        if parser.has_section(section) and any(
                key in parser[section] for key in ("aws_access_key_id", "credential_process", "role_arn",
                                                   "sso_session", "sso_start_url", "source_profile",
                                                   "login_session")):
            return True
    if env.get("AWS_EC2_METADATA_DISABLED", "").lower() == "true":
        return False
    import urllib.request
    token = urllib.request.Request("http://169.254.169.254/latest/api/token", method="PUT",
                                   headers={"X-aws-ec2-metadata-token-ttl-seconds": "60"})
    try:
        with urllib.request.urlopen(token, timeout=1):
            return True
    except OSError:
        return False


def release_template(release: Path, architecture: str) -> Path:
    """The template of a `make package` folder for `architecture`, once
    every file SHA256SUMS names is there and matches: nothing is deployed
    from a partial or altered download."""
    if not release.is_dir():
        raise Refused(f"--release {release}: no such folder (make package writes one in dist/)")
    sums = release / "SHA256SUMS"
    if not sums.is_file():
        raise Refused(f"--release {release}: no SHA256SUMS: is it a folder make package wrote?")
    for line in sums.read_text().splitlines():
        digest, _, name = line.partition("  ")
        path = release / name
        # The receipts CLI is the packaging machine's, a convenience: one
        # installed elsewhere does as well (receipts_command).
        if name == "receipts" and not path.is_file():
            continue
        if not path.is_file():
            raise Refused(f"--release {release}: {name} is missing (SHA256SUMS names it)")
        if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            raise Refused(f"--release {release}: {name} does not match its checksum: download it again")
    template = release / f"template-{architecture}.yaml"
    if not template.is_file():
        built = sorted(p.stem.removeprefix("template-") for p in release.glob("template-*.yaml"))
        raise Refused(f"--release {release} holds no {architecture} build: give --architecture "
                      + " or ".join(built or ["(none)"]))
    return template


def release_checkout(release: Path) -> str | None:
    """Why this checkout cannot deploy `release`, or None: the wizard, the
    template's questions and the release's catalog must be of one commit,
    so a checkout of another (a clone of main, a release of last month) is
    sent to the release's own, before anything is installed or deployed."""
    try:
        packaged = json.loads((release / "release.json").read_text())
    except (OSError, ValueError):
        return None
    commit = packaged.get("commit")
    try:
        here = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    if not commit or not here or here == commit:
        return None
    version = str(packaged.get("version", ""))
    wanted = f"v{version}" if re.fullmatch(r"\d+\.\d+\.\d+\S*", version) else commit
    return (f"--release {release} was built from {wanted}, this checkout is {here[:12]}: "
            f"git fetch --tags && git checkout {wanted}, then make deploy again")


def preflight(architecture: str, release: Path | None = None) -> None:
    """What the deploy needs that make deploy cannot install, checked before
    it installs anything, each missing thing in one line. From a release
    folder, no Rust at all: its files instead."""
    problems = []
    if not credentials_in_sight():
        problems.append(NO_CREDENTIALS)
    if release is not None:
        try:
            release_template(release, architecture)
        except Refused as problem:
            problems.append(str(problem))
        else:
            problems.extend(filter(None, [release_checkout(release)]))
    elif shutil.which("cargo") is None:
        problems.append("cargo is missing: install the Rust toolchain (rustup), or deploy a release without "
                        "Rust: make deploy RELEASE=<folder> (README)")
    elif architecture == "arm64" and shutil.which("rustup"):
        installed = subprocess.run(["rustup", "target", "list", "--installed"],
                                   capture_output=True, text=True).stdout.split()
        if "aarch64-unknown-linux-gnu" not in installed:
            problems.append("the arm64 Rust target is missing: rustup target add aarch64-unknown-linux-gnu "
                            "(or deploy with --architecture x86_64)")
    if problems:
        raise Refused("; ".join(problems))


def check_prerequisites(architecture: str, release: Path | None) -> None:
    """Everything the deploy needs, each missing thing in one line: the
    preflight, boto3's own look for credentials, and the installed tools
    (cargo-lambda only to build)."""
    import boto3
    preflight(architecture, release)
    problems = []
    if boto3.session.Session().get_credentials() is None:
        problems.append(NO_CREDENTIALS)
    for tool in ("sam",) if release else ("sam", "cargo-lambda"):
        if shutil.which(tool) is None:
            problems.append(f"{tool} is missing: make deploy installs it into .tools/sam-venv: is that on PATH?")
    if problems:
        raise Refused("; ".join(problems))


def key_after_deploy(a: Answers) -> dict | None:
    """How the sender's signing key reaches the stack when it exists only
    after the deploy (KEY_AFTER_DEPLOY); None when it is known before."""
    if a.sender == "webflow" and a.webflow_webhook != "api":
        return None
    return KEY_AFTER_DEPLOY.get(a.sender)


def signing_key_secret(a: Answers) -> str:
    """The secret that holds a sender's own signing key."""
    return f"{a.stack_name}/{a.sender}-signing-key"


def sender_key_placeholder(a: Answers, secrets_client) -> None:
    """For a sender whose key exists only once its webhook does, after the
    deploy. The stack needs the secret now; until the key is put into it,
    it holds a random value that no delivery matches. A second run keeps
    what the secret holds."""
    name = signing_key_secret(a)
    title = KEY_AFTER_DEPLOY[a.sender]["title"]
    try:
        a.secret_arns["WebhookSecretArn"] = secrets_client.describe_secret(SecretId=name)["ARN"]
    except secrets_client.exceptions.ResourceNotFoundException:
        created = secrets_client.create_secret(
            Name=name, SecretString="placeholder-" + os.urandom(24).hex(),
            Description=f"{title}'s signing key for the {a.stack_name} stack (staticforms-to-crm)")
        a.secret_arns["WebhookSecretArn"] = created["ARN"]
        say(f"created secret {name} ({title}'s key goes into it after the deploy)")


def store_sender_key(a: Answers, secrets_client, asker: Asker, url: str) -> None:
    """After the deploy: the sender's key for the webhook made with the URL."""
    how = KEY_AFTER_DEPLOY[a.sender]
    name = signing_key_secret(a)
    say("  " + how["create"].format(url=url))
    key = os.environ.get(how["variable"], "")
    if not key and asker.interactive:
        key = asker.ask(how["ask"] + "; stored in Secrets Manager (empty: store it later).",
                        how["label"], "", hidden=True)
    if not key:
        say("  " + how["later"].format(name=name))
        return
    secrets_client.put_secret_value(SecretId=name, SecretString=key)
    say(f"  stored {how['title']}'s key in {name}: deliveries signed with it are accepted within five minutes "
        "(the function re-reads its secrets)")


def create_secrets(a: Answers, secrets_client) -> None:
    """One secret per credential, named after the stack; a second run puts
    the new value into the same secret."""
    names = dict(SENDER_SECRET_NAMES)
    names.update({s["parameter"]: s["name"] for d in CATALOG["destinations"] for s in d["secrets"]})
    for parameter, value in a.secret_values.items():
        name = f"{a.stack_name}/{names[parameter]}"
        try:
            created = secrets_client.create_secret(
                Name=name, SecretString=value,
                Description=f"{parameter} of the {a.stack_name} stack (staticforms-to-crm)")
            arn = created["ARN"]
            say(f"created secret {name}")
        except secrets_client.exceptions.ResourceExistsException:
            arn = secrets_client.put_secret_value(SecretId=name, SecretString=value)["ARN"]
            say(f"put a new value into secret {name}")
        a.secret_arns[parameter] = arn


def parameter_overrides(a: Answers) -> dict[str, str]:
    overrides = {"Architecture": a.architecture, "Observability": a.observability}
    if a.sender == "staticforms":
        overrides["WebhookAuth"] = AUTH_MODES[a.auth]
        overrides["IdempotencyKeyHeader"] = "derive"
    else:
        overrides["Sender"] = a.sender
    if a.webflow_webhook == "dashboard":
        overrides["WebhookAuth"] = "query:token"
    overrides["Destination"] = a.destination
    if a.field_map:
        overrides["FieldMap"] = a.field_map
    if a.alarm_email:
        overrides["AlarmEmail"] = a.alarm_email
    overrides.update(a.asked)
    if a.audit_forms:
        overrides["AuditForms"] = a.audit_forms
    overrides.update(a.secret_arns)
    return overrides


def overrides_text(overrides: dict[str, str]) -> str:
    """SAM's parameter_overrides form: Key='value' pairs, space-separated."""
    return " ".join(f"{key}={sam_quoted(value)}" for key, value in overrides.items())


def save_samconfig(path: Path, a: Answers, overrides: dict[str, str]) -> None:
    """The answers as a samconfig config environment named after the stack
    (`sam deploy --config-env <stack>` repeats them), the file's comments,
    other environments and other stacks' answers kept. Only ARNs: never a
    secret value."""
    import tomlkit
    config = tomlkit.parse(path.read_text()) if path.exists() else tomlkit.document()
    if "version" not in config:
        config["version"] = 0.1
    if a.stack_name not in config:
        config.add(tomlkit.comment(f"make deploy's answers for the stack {a.stack_name}: "
                                   f"sam deploy --config-env {a.stack_name}"))
        config[a.stack_name] = tomlkit.table(is_super_table=True)
    env = config[a.stack_name]
    sections = {
        "global": {"stack_name": a.stack_name, "region": a.region},
        # Rust through cargo-lambda is a beta build method in SAM.
        "build": {"cached": True, "parallel": False, "beta_features": True,
                  "parameter_overrides": f"Architecture={sam_quoted(a.architecture)}"},
        "deploy": {
            "capabilities": "CAPABILITY_IAM",
            "resolve_s3": True,
            "confirm_changeset": True,
            "fail_on_empty_changeset": False,
            "parameter_overrides": overrides_text(overrides),
        },
    }
    for command, values in sections.items():
        if command not in env:
            env[command] = tomlkit.table(is_super_table=True)
        if "parameters" not in env[command]:
            env[command]["parameters"] = tomlkit.table()
        for key, value in values.items():
            env[command]["parameters"][key] = value
    path.write_text(tomlkit.dumps(config))


def one_line(error: Exception) -> str:
    """An AWS failure as one line saying what to do (--debug: the traceback)."""
    from botocore import exceptions as aws
    if isinstance(error, aws.NoRegionError):
        return "no AWS region: give --region or set AWS_REGION"
    if isinstance(error, aws.NoCredentialsError):
        return "no AWS credentials: run `aws configure` (or set AWS_PROFILE / AWS_ACCESS_KEY_ID)"
    if isinstance(error, aws.ProfileNotFound):
        return f"{error} (aws configure --profile <name>)"
    if isinstance(error, (aws.EndpointConnectionError, aws.ConnectTimeoutError, aws.ReadTimeoutError)):
        return f"AWS could not be reached ({error}): check the network, the region, or AWS_ENDPOINT_URL"
    if isinstance(error, aws.ClientError):
        info = error.response.get("Error", {})
        code, message = info.get("Code", "an error"), info.get("Message", "")
        operation = getattr(error, "operation_name", "a call")
        hint = ""
        if "AccessDenied" in code or "UnrecognizedClient" in code or "InvalidClientTokenId" in code:
            hint = ": the credentials lack a permission (docs/deploy.md lists what deploying needs)"
        return f"AWS refused {operation} ({code}: {message}){hint}"
    if isinstance(error, aws.BotoCoreError):
        return f"AWS: {error}"
    return f"unexpected {type(error).__name__}: {error} (run again with --debug for the traceback)"


def run(command: list[str], cwd: Path, failed: str | None = None) -> None:
    say("$ " + " ".join(command))
    if subprocess.run(command, cwd=cwd).returncode != 0:
        raise Refused(failed or f"{command[0]} {command[1]} failed (see above)")


def runs(binary: Path) -> bool:
    """Whether `binary --version` runs on this machine (a CLI packaged
    for another system or architecture does not)."""
    try:
        return subprocess.run([str(binary), "--version"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def receipts_command(release: Path | None) -> list[str]:
    """The receipts CLI: RECEIPTS_BIN; else, deploying a release, the one
    in its folder (make package puts it there), else the one on PATH; else
    built from this checkout, so it knows what the functions being deployed
    know."""
    given = os.environ.get("RECEIPTS_BIN", "").split()
    if given:
        return given
    if release is not None:
        packaged = release / "receipts"
        # Built for the machine that packaged it: used where it runs here.
        if packaged.is_file() and os.access(packaged, os.X_OK) and runs(packaged):
            return [str(packaged.resolve())]
        if shutil.which("receipts"):
            return ["receipts"]
    elif shutil.which("cargo"):
        return ["cargo", "run", "--release", "--locked", "--quiet", "-p", "receipts", "--"]
    raise Refused("the receipts CLI runs the smoke test and stores the routes, and is not in the release folder, "
                  "on PATH or in RECEIPTS_BIN: install the release's (README, \"Deploy without Rust\"), "
                  "set RECEIPTS_BIN=/path/to/receipts, or give --no-smoke and move routes.toml away")


def check_routes(routes: Path, from_release: Path | None, destinations: str | None) -> None:
    """`receipts routes check`, with the stack's destinations when known: a
    route naming one the stack will not have is refused before the deploy."""
    given = ["--destinations", ",".join(name.strip().lower() for name in destinations.split(","))] \
        if destinations else []
    run([*receipts_command(from_release), "routes", "check", str(routes), *given], ROOT,
        failed=f"{routes.name} has problems (each named above); fix them, or move the file away")


def routes_file(flag: Path | None) -> Path | None:
    """The routes file to store: --routes, else routes.toml when there is one."""
    if flag is not None:
        if not flag.is_file():
            raise Refused(f"--routes {flag}: no such file")
        return flag
    default = ROOT / "routes.toml"
    return default if default.is_file() else None


def main(argv=None, stdin=sys.stdin) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--preflight" in argv:
        # Before anything is installed or written, the catalog included.
        early = argparse.ArgumentParser(add_help=False)
        early.add_argument("--architecture", default="arm64")
        early.add_argument("--release", type=Path)
        early.add_argument("--no-smoke", action="store_true")
        early.add_argument("--routes", type=Path)
        known, _ = early.parse_known_args(argv)
        try:
            preflight(known.architecture, known.release)
            # The CLI too, before SAM is installed: a release folder's, or
            # one on PATH or in RECEIPTS_BIN.
            if known.release is not None and (not known.no_smoke or known.routes or (ROOT / "routes.toml").is_file()):
                receipts_command(known.release)
            return 0
        except Refused as problem:
            print(f"make deploy: {problem}", file=sys.stderr)
            return 1
    if not CATALOG["senders"]:
        print(f"make deploy: no catalog at {CATALOG_FILE}: make deploy writes it "
              "(cargo run -p shared --bin catalog > .tools/catalog.json); a release folder carries its own",
              file=sys.stderr)
        return 1
    parser = argparse.ArgumentParser(
        prog="make deploy", description=__doc__.split("\n\n")[0],
        epilog="Secrets come from the environment, never from flags: "
               + ", ".join([v["variable"] for d in CATALOG["destinations"] for s in d["secrets"] for v in s["values"]]
                           + ["WEBFLOW_WEBHOOK_SECRET", "SENDER_API_TOKEN"])
               + " (else a hidden prompt). An empty flag value is given as --alarm-email= .")
    parser.add_argument("--sender", choices=SENDERS, type=str.lower, help="who sends the submissions (docs/senders/); asked first")
    parser.add_argument("--stack-name")
    parser.add_argument("--region")
    parser.add_argument("--auth", choices=sorted(AUTH_MODES), type=str.lower, help="Static Forms only. url: a token in the webhook URL; header: Authorization: Bearer")
    parser.add_argument("--webflow-webhook", choices=WEBFLOW_WEBHOOKS, type=str.lower,
                        help="webflow: dashboard (unsigned; a token in the URL), api (site token; its key is asked after the deploy) or app (OAuth app's client secret)")
    parser.add_argument("--allowed-origins", metavar="ORIGINS", help="html: the origins of the pages whose form posts here, comma-separated")
    parser.add_argument("--thank-you-url", help="html: where the visitor goes once the form is stored (on an allowed origin)")
    parser.add_argument("--turnstile-secret-arn", help="html: an existing secret holding the Turnstile widget's secret, instead of TURNSTILE_SECRET")
    parser.add_argument("--webhook-secret-arn", help="webflow app or api, formspree: an existing secret holding the sender's signing key, instead of WEBFLOW_WEBHOOK_SECRET or FORMSPREE_SIGNING_SECRET")
    parser.add_argument("--destination", metavar="NAME[,NAME...]",
                        help=f"one or several of {', '.join(DESTINATIONS)}, comma-separated")
    parser.add_argument("--field-map", metavar="FILE", help=f"{' or '.join(MAPPED_DESTINATIONS)}: a JSON file of CRM property to form field")
    parser.add_argument("--alarm-email", help="empty for none: --alarm-email=")
    for name, destination in DESTINATION.items():
        for asked in destination["asked"]:
            parser.add_argument(asked["flag"], help=f"{name}: {asked['why']}")
        for stored in destination["secrets"]:
            holds = "/".join(v["variable"] for v in stored["values"])
            parser.add_argument(stored["flag"], help=f"{name}: an existing secret instead of {holds}")
            if stored["optional"]:
                parser.add_argument(f"--no-{stored['name']}", action="store_true",
                                    help=f"{name}: none ({stored['values'][0]['prompt']} is optional)")
    parser.add_argument("--sender-api-token-secret-arn",
                        help="tally, typeform, webflow, formspree or netlify: an existing secret holding the sender's API token, for the daily "
                             "audit (else SENDER_API_TOKEN, else asked at a terminal)")
    parser.add_argument("--audit-forms", metavar="IDS", help="the forms the audit reads, comma-separated "
                        "(default: the routes file's)")
    parser.add_argument("--no-audit", action="store_true", help="do not offer the audit")
    parser.add_argument("--notify-url-secret-arn",
                        help="an existing secret holding the URL each new lead is announced at (a Slack or Teams "
                             "incoming webhook; else NOTIFY_URL, else asked at a terminal)")
    parser.add_argument("--no-notice", action="store_true", help="do not offer the new-lead notice")
    parser.add_argument("--architecture", choices=["arm64", "x86_64"], default="arm64")
    parser.add_argument("--observability", choices=["lean", "full"], default="lean",
                        help="lean (recommended for a small stack): every alarm for a lead that could be lost "
                             "or stuck, no dashboard and no metric that only explains; full adds them "
                             "(docs/cost.md)")
    parser.add_argument("--config-file", type=Path, default=ROOT / "samconfig.toml")
    parser.add_argument("--routes", type=Path, metavar="FILE",
                        help="the routes file to store in the stack (docs/routes.md); default: routes.toml when there is one")
    parser.add_argument("--no-smoke", action="store_true", help="skip the smoke test after the deploy")
    parser.add_argument("--smoke-email", metavar="ADDRESS",
                        help="the smoke lead's address, at a domain of yours (Mailchimp refuses example.com)")
    parser.add_argument("--debug", action="store_true", help="a traceback with every error")
    parser.add_argument("--release", type=Path, metavar="FOLDER",
                        help="deploy what make package (or a GitHub release) holds in FOLDER: no Rust, no build")
    parser.add_argument("--preflight", action="store_true",
                        help="only check what make deploy cannot install (credentials, cargo, the arm64 target), "
                             "before it installs anything")
    args = parser.parse_args(argv)
    from_release = args.release
    try:
        check_prerequisites(args.architecture, args.release)
        routes = routes_file(args.routes)
        if routes is not None or not args.no_smoke:
            receipts_command(from_release)  # a missing CLI is said now, not after the deploy
        if args.destination and check_destinations(args.destination):
            raise Refused(f"--destination: {check_destinations(args.destination)}")
        if routes is not None:
            say(f"Checking the routes file {routes.name} first: nothing is asked or deployed with a problem in it.")
            check_routes(routes, from_release, args.destination)
        say("A first deployment of staticforms-to-crm. Enter takes the [default].")
        asker = Asker(stdin)
        answers = gather(args, asker, routes)
        if routes is not None and not args.destination:
            # The destinations answered: each route's must be the stack's.
            check_routes(routes, from_release, answers.destination)
        import boto3
        session = boto3.session.Session(region_name=answers.region)
        secrets_client = session.client("secretsmanager")
        if key_after_deploy(answers) and not args.webhook_secret_arn:
            sender_key_placeholder(answers, secrets_client)
        elif key_after_deploy(answers):
            answers.secret_arns["WebhookSecretArn"] = args.webhook_secret_arn
        if answers.observability == "lean":
            say("Observability: lean, every alarm for a lead that could be lost or stuck, without the "
                "dashboard and the metrics that only explain (--observability full adds them; docs/cost.md).")
        check_credentials(answers)
        create_secrets(answers, secrets_client)
        overrides = parameter_overrides(answers)
        save_samconfig(args.config_file, answers, overrides)
        say(f"saved the answers in {args.config_file.name} as config environment {answers.stack_name} "
            "(no secret values)")
        config = ["--config-file", str(args.config_file.resolve()), "--config-env", answers.stack_name]
        if args.release is None:
            run(["sam", "build", *config, "--parameter-overrides", f"Architecture={answers.architecture}"], ROOT)
            template = []
        else:
            # Built already: sam deploy uploads the zips the template names.
            template = ["--template-file", str(release_template(args.release, answers.architecture).resolve())]
        run(["sam", "deploy", *config, *template, "--stack-name", answers.stack_name, "--region", answers.region,
             "--no-confirm-changeset", "--parameter-overrides",
             *[f"{k}={sam_quoted(v)}" for k, v in overrides.items()]], ROOT)
        outputs = {o["OutputKey"]: o["OutputValue"] for o in session.client("cloudformation").describe_stacks(
            StackName=answers.stack_name)["Stacks"][0].get("Outputs", [])}
        url = outputs.get("WebhookUrl", "<WebhookUrl>")
        print_url = (f"receipts --stack {answers.stack_name} --region {answers.region} "
                     "webhook-url --show-secret")
        say("")
        if answers.sender == "staticforms":
            say("Deployed. In Static Forms: Settings > Webhooks > Add Webhook, format: the current one.")
            if answers.auth == "url":
                say(f"  URL: {url}?token=<the secret>")
            else:
                say(f"  URL: {url}")
                say("  Header: Authorization: Bearer <the secret>")
            say(f"  Print it whole, secret included, at a terminal: {print_url}")
        elif answers.webflow_webhook == "dashboard":
            say("Deployed. In Webflow: Site settings > Apps & Integrations > Webhooks > Add webhook, "
                "trigger Form submission,")
            say(f"  URL: {url}?token=<the secret>")
            say(f"  Print it whole, secret included, at a terminal: {print_url}")
        elif key_after_deploy(answers):
            say("Deployed.")
            store_sender_key(answers, secrets_client, asker, url)
        else:
            say(f"Deployed. {sender_setup(answers.sender, url)}")
            entry = next(s for s in CATALOG["senders"] if s["name"] == answers.sender)
            if not entry.get("key_chosen_by_sender") and not entry.get("browser"):
                say(f"  The secret, to paste there (at a terminal): {print_url}")
        if (ROOT / "docs" / "senders" / f"{answers.sender}.md").is_file():
            say(f"  Step by step: docs/senders/{answers.sender}.md")
        if answers.alarm_email:
            say(f"  Confirm the subscription mail AWS sent to {answers.alarm_email}, or alarms will not reach you.")
        if args.release is None:
            say(f"  Later deploys: make sam ARGS=\"build --config-env {answers.stack_name}\" then "
                f"make sam ARGS=\"deploy --config-env {answers.stack_name}\"")
        else:
            say(f"  Later deploys: make sam ARGS=\"deploy --config-env {answers.stack_name} "
                f"--template-file <release folder>/template-{answers.architecture}.yaml\"")
        stack = ["--stack", answers.stack_name, "--region", answers.region]
        if routes is not None:
            say("")
            say(f"Routes: storing {routes.name} in the stack; both functions follow it within five minutes.")
            run([*receipts_command(from_release), *stack, "routes", "apply", str(routes)], ROOT,
                failed=f"the stack is deployed, but {routes.name} was not stored (see above); "
                       f"run: receipts {' '.join(stack)} routes apply {routes}")
        if not args.no_smoke:
            say("")
            say("Smoke test: one marked submission through the deployed pipeline.")
            smoke_email = ["--email", args.smoke_email] if args.smoke_email else []
            run([*receipts_command(from_release), *stack, "smoke", *smoke_email], ROOT)
        return 0
    except Refused as problem:
        print(f"make deploy: {problem}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("make deploy: stopped", file=sys.stderr)
        return 130
    except Exception as error:  # one line, whatever failed; --debug shows where
        if args.debug:
            traceback.print_exc()
        print(f"make deploy: {one_line(error)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
