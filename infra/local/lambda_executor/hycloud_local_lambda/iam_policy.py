"""IAM policy evaluation for one request, as AWS documents it for a single account.

Order (AWS "Policy evaluation logic", same-account requests): an explicit ``Deny`` in any
applicable policy wins; otherwise an ``Allow`` in an identity-based policy or in the
resource-based policy (a bucket policy naming the principal) allows; otherwise the request
is implicitly denied.

Matching: ``Action``/``NotAction`` compare case-insensitively with ``*`` and ``?``
wildcards; ``Resource``/``NotResource`` compare case-sensitively with the same wildcards
(``*`` may span ``/`` and ``:``). Conditions: every operator block in a statement must hold
(AND), every key in a block must hold (AND), any value of a key may match (OR). Operators
supported are those the app's templates use plus their close relatives: ``String(Not)Equals``,
``String(Not)EqualsIgnoreCase``, ``String(Not)Like``, ``Arn(Not)Equals``, ``Arn(Not)Like``,
``Bool``, ``Null``, ``Numeric*``, each with ``...IfExists``. A key absent from the request
makes a condition false (true with ``IfExists``, and for the negated operators as AWS
documents); an operator not listed here is treated as false so an unknown condition never
grants.

Evaluators looked at on PyPI: ``policyuniverse`` (Netflix; parses and expands actions and
ARNs, does not decide a request, last release 2023), ``parliament`` (duo-labs; a linter of
policy documents, no request evaluation), ``iam-ape`` (computes effective permissions from
an account's authorization dump, needs the whole dump and more dependencies),
``policy-sentry`` (writes policies). None decides "is this action on this ARN allowed by
these documents", and this module must run inside the function's own interpreter, which
on AWS holds only the standard library and boto3; hence this small, stdlib-only one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

ALLOW, DENY, IMPLICIT_DENY = "allow", "explicit-deny", "implicit-deny"


@dataclass(frozen=True)
class Request:
    """One action on one resource, with the condition keys the request carries."""

    action: str
    resource: str
    context: dict[str, Any] = field(default_factory=dict)
    principal: str = ""  # the caller's role ARN, for resource-based policies


@dataclass(frozen=True)
class Decision:
    result: str
    statement: dict | None = None  # the statement that decided an allow or explicit deny

    @property
    def allowed(self) -> bool:
        return self.result == ALLOW


@lru_cache(maxsize=4096)
def _pattern(pattern: str, ignore_case: bool) -> re.Pattern:
    """``*``/``?`` wildcards only (no character classes, unlike fnmatch's own syntax).

    AWS: a ``*`` that ends an ARN segment may match across colons; one inside a segment may not.
    """
    parts = []
    for i, c in enumerate(pattern):
        if c == "*":
            parts.append(".*" if pattern[i + 1 : i + 2] in ("", ":") else "[^:]*")
        else:
            parts.append("." if c == "?" else re.escape(c))
    return re.compile("".join(parts) + r"\Z", re.IGNORECASE | re.DOTALL if ignore_case else re.DOTALL)


def wildcard_match(pattern: str, value: str, ignore_case: bool = False) -> bool:
    return bool(_pattern(pattern, ignore_case).match(value))


def _as_list(value: Any) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _action_matches(statement: dict, action: str) -> bool:
    if "NotAction" in statement:
        return not any(wildcard_match(p, action, True) for p in _as_list(statement["NotAction"]))
    return any(wildcard_match(p, action, True) for p in _as_list(statement.get("Action")))


def _resource_matches(statement: dict, resource: str) -> bool:
    if "NotResource" in statement:
        return not any(wildcard_match(p, resource) for p in _as_list(statement["NotResource"]))
    return any(wildcard_match(p, resource) for p in _as_list(statement.get("Resource")))


def _principal_matches(statement: dict, principal: str) -> bool:
    """Resource policies only: ``"*"``, ``{"AWS": "*"}``, the role ARN or its account."""
    if "NotPrincipal" in statement:
        return not _principal_matches({"Principal": statement["NotPrincipal"]}, principal)
    value = statement.get("Principal")
    if value == "*":
        return True
    if not isinstance(value, dict):
        return False
    account = principal.split(":")[4] if principal.count(":") >= 5 else ""
    for entry in _as_list(value.get("AWS")):
        if entry in ("*", principal, account, f"arn:aws:iam::{account}:root"):
            return True
    return False


def _bool(value: Any) -> str:
    return str(value).lower()


def _test(op: str, have: Any, want: str) -> bool:
    if op in ("StringEquals", "ArnEquals"):
        return str(have) == want
    if op == "StringEqualsIgnoreCase":
        return str(have).lower() == want.lower()
    if op in ("StringLike", "ArnLike"):
        return wildcard_match(want, str(have))
    if op == "Bool":
        return _bool(have) == _bool(want)
    if op.startswith("Numeric"):
        a, b = float(have), float(want)
        return {
            "NumericEquals": a == b,
            "NumericLessThan": a < b,
            "NumericLessThanEquals": a <= b,
            "NumericGreaterThan": a > b,
            "NumericGreaterThanEquals": a >= b,
        }.get(op, False)
    raise KeyError(op)


NEGATED = {
    "StringNotEquals": "StringEquals",
    "StringNotEqualsIgnoreCase": "StringEqualsIgnoreCase",
    "StringNotLike": "StringLike",
    "ArnNotEquals": "ArnEquals",
    "ArnNotLike": "ArnLike",
    "NumericNotEquals": "NumericEquals",
}
KNOWN = {"StringEquals", "StringEqualsIgnoreCase", "StringLike", "ArnEquals", "ArnLike", "Bool"} | {
    "NumericEquals", "NumericLessThan", "NumericLessThanEquals", "NumericGreaterThan", "NumericGreaterThanEquals"
}  # fmt: skip


def _context_value(context: dict[str, Any], key: str) -> Any:
    """Condition keys are case-insensitive."""
    if key in context:
        return context[key]
    lowered = key.lower()
    for k, v in context.items():
        if k.lower() == lowered:
            return v
    return None


def condition_holds(operator: str, key: str, wanted: Any, context: dict[str, Any]) -> bool:
    """One key of one operator block."""
    if_exists = operator.endswith("IfExists")
    op = operator[: -len("IfExists")] if if_exists else operator
    have = _context_value(context, key)
    wants = [str(w) for w in _as_list(wanted)]
    if op == "Null":
        return any((have is None) == (_bool(w) == "true") for w in wants)
    if have is None:
        return if_exists or op in NEGATED
    haves = _as_list(have)
    if op in NEGATED:
        return not any(_test(NEGATED[op], h, w) for h in haves for w in wants)
    if op not in KNOWN:
        return False
    try:
        return any(_test(op, h, w) for h in haves for w in wants)
    except (TypeError, ValueError):
        return False


def _conditions_hold(statement: dict, context: dict[str, Any]) -> bool:
    for operator, block in (statement.get("Condition") or {}).items():
        if operator.startswith(("ForAnyValue:", "ForAllValues:")):
            return False  # multi-valued keys: none in this app; never grant on them
        for key, wanted in block.items():
            if not condition_holds(operator, key, wanted, context):
                return False
    return True


def statements(document: dict | None) -> list[dict]:
    return [s for s in _as_list((document or {}).get("Statement")) if isinstance(s, dict)]


def applies(statement: dict, request: Request, resource_policy: bool = False) -> bool:
    if resource_policy and not _principal_matches(statement, request.principal):
        return False
    return (
        _action_matches(statement, request.action)
        and _resource_matches(statement, request.resource)
        and _conditions_hold(statement, request.context)
    )


def evaluate(
    request: Request, identity_policies: list[dict], resource_policies: list[dict] | None = None
) -> Decision:
    """Explicit deny anywhere, then an allow anywhere, else implicit deny."""
    pairs = [(s, False) for doc in identity_policies for s in statements(doc)]
    pairs += [(s, True) for doc in resource_policies or [] for s in statements(doc)]
    allow = None
    for statement, is_resource in pairs:
        if not applies(statement, request, is_resource):
            continue
        if statement.get("Effect") == "Deny":
            return Decision(DENY, statement)
        if statement.get("Effect") == "Allow" and allow is None:
            allow = statement
    return Decision(ALLOW, allow) if allow is not None else Decision(IMPLICIT_DENY)


__all__ = ["Request", "Decision", "evaluate", "wildcard_match", "condition_holds"]
