"""The PromQL of our dashboards, taken out of the files Grafana and Prometheus read, so that tests can hand every
expression to Prometheus's own parser (`promtool`) and check its metric names against what our exporters produce.

- `dashboard_queries(path)`: every `targets[].expr` of a Grafana dashboard (the panels of collapsed rows
  included), with Grafana's variables replaced, so each is PromQL as Prometheus would receive it.
- `console_queries(path)`: every expression of a Prometheus console template page: the argument of `query`,
  the first of `args` given to `template "prom_query_drilldown"`, and the `expr` of `PromConsole.Graph({...})`.
- `metric_names(expr)`: the metric names an expression selects.

A value only known when Prometheus renders the page (a `printf` argument such as `.Labels.node_id`, a template
action inside a JavaScript string) is replaced by a literal stand-in: the expression still parses as it will.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeAlias

# Grafana's built-in interval variables, as a duration (or a number where Grafana gives one); every other
# variable is a dashboard variable, whose "All" matches everything.
GRAFANA_BUILTINS = {
    "__rate_interval": "1m",
    "__interval": "1m",
    "__range": "1m",
    "__interval_ms": "60000",
    "__range_ms": "60000",
    "__range_s": "60",
}
MATCH_EVERYTHING = ".*"
# What a value that only exists at render time stands in as: a string, or a number for numeric verbs.
STAND_IN = "x"
NUMERIC_STAND_IN = "0"

_GRAFANA_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)(?::\w+)?\]\]")

_GO_STRING = r'"(?:[^"\\]|\\.)*"|`[^`]*`'
_GO_ACTION = re.compile(rf"\{{\{{-?((?:{_GO_STRING}|[^\"`])*?)-?\}}\}}", re.DOTALL)
_GO_COMMENT = re.compile(r"\{\{-?\s*/\*.*?\*/\s*-?\}\}", re.DOTALL)
_GO_TOKEN = re.compile(rf"(?P<string>{_GO_STRING})|(?P<open>\()|(?P<close>\))|(?P<pipe>\|)|(?P<word>[^\s()|\"`]+)")
_GO_KEYWORDS = frozenset({"if", "else", "range", "with", "end", "break", "continue", "block", "define"})
_PRINTF_VERB = re.compile(r"%[-+# 0]*\d*(?:\.\d+)?([a-zA-Z%])")

_JS_STRING = r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\''
_GRAPH = re.compile(r"\bPromConsole\.Graph\s*\((.*?)</script>", re.DOTALL)
_GRAPH_EXPR = re.compile(rf"\bexpr\s*:\s*(\[(?:\s*(?:{_JS_STRING})\s*,?)*\s*\]|{_JS_STRING})")

_PROMQL_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_PROMQL_MATCHERS = re.compile(r"\{[^{}]*\}")
_PROMQL_BRACKETS = re.compile(r"\[[^\[\]]*\]")
_PROMQL_LABEL_LIST = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", re.IGNORECASE)
_PROMQL_IDENTIFIER = re.compile(r"(?<![\w.:])[a-zA-Z_:][\w:]*")
_PROMQL_KEYWORDS = frozenset(
    {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset"}
    | {"inf", "nan", "atan2"}
)

# A parsed Go template pipeline: its commands, each a list of operands; an operand is a token (a string literal
# kept quoted, or a word) or a parenthesised pipeline.
Operand: TypeAlias = str | list["Command"]
Command: TypeAlias = list[Operand]


def dashboard_queries(path: Path) -> list[str]:
    """Every `targets[].expr` of the Grafana dashboard at `path`, panels of (collapsed) rows included, in
    document order, with Grafana's interval variables replaced by `1m` and dashboard variables by `.*`."""
    dashboard = json.loads(Path(path).read_text())
    return [
        grafana_substitute(target["expr"])
        for panel in _panels(dashboard.get("panels", []))
        for target in panel.get("targets", [])
        if target.get("expr")
    ]


def grafana_substitute(expr: str) -> str:
    """`expr` as Grafana sends it: `$__rate_interval` and friends as `1m`, `$var`, `${var}`, `${var:fmt}` and
    `[[var]]` as a regex that matches everything."""

    def value(match: re.Match[str]) -> str:
        name = next(group for group in match.groups() if group)
        return GRAFANA_BUILTINS.get(name, MATCH_EVERYTHING)

    return _GRAFANA_VARIABLE.sub(value, expr)


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        # A collapsed row keeps its panels inside it; an expanded one has them at the top level after it.
        yield from _panels(panel.get("panels", []))


def console_queries(path: Path) -> list[str]:
    """Every PromQL expression of the console template page at `path`, in the order the template actions and
    then the graphs come: arguments of `query`, the expression given to `prom_query_drilldown`, and each
    `expr` of `PromConsole.Graph`. Raises ValueError for a query whose expression cannot be read off the page."""
    page = _GO_COMMENT.sub("", Path(path).read_text())
    queries: list[str] = []
    for action in _GO_ACTION.finditer(page):
        queries.extend(_action_queries(_parse_pipeline(_pipeline_tokens(action.group(1)))))
    for graph in _GRAPH.finditer(page):
        found = _GRAPH_EXPR.search(graph.group(1))
        if not found:
            raise ValueError(f"a PromConsole.Graph without an expr: {graph.group(0)[:120]!r}")
        queries.extend(_render_time_stand_ins(_unquote(s)) for s in re.findall(_JS_STRING, found.group(1)))
    return queries


def _pipeline_tokens(action: str) -> list[str]:
    """The tokens of an action's pipeline: without the keyword (`if`, `else with`, `range`, ...) and the variables
    it declares or assigns (`$x :=`, `$k, $v :=`)."""
    tokens = [match.group(0) for match in _GO_TOKEN.finditer(action)]
    while tokens and tokens[0] in _GO_KEYWORDS:
        tokens.pop(0)
    for assignment in (":=", "="):
        if assignment in tokens[:4]:
            tokens = tokens[tokens.index(assignment) + 1 :]
    return tokens


def _parse_pipeline(tokens: list[str]) -> list[Command]:
    """The commands of a pipeline (`a b | c (d e)`), parentheses nested; consumes `tokens`."""
    commands: list[Command] = [[]]
    while tokens:
        token = tokens.pop(0)
        if token == ")":
            break
        if token == "|":
            commands.append([])
        elif token == "(":
            commands[-1].append(_parse_pipeline(tokens))
        else:
            commands[-1].append(token)
    return [command for command in commands if command]


def _action_queries(pipeline: list[Command]) -> Iterator[str]:
    for index, command in enumerate(pipeline):
        head = command[0]
        if head == "query":
            # `query EXPR`, or `EXPR | query` where the preceding commands make the expression.
            value = _operand_value(command[1]) if len(command) > 1 else _pipeline_value(pipeline[:index])
            if value is None:
                raise ValueError(f"cannot read the expression of a query off the page: {_show(pipeline)}")
            yield value
        elif head == "template" and len(command) > 2 and command[1] == '"prom_query_drilldown"':
            # The data is `(args EXPR ...)`: a parenthesised pipeline of one command.
            data = command[2]
            arguments = data[0] if isinstance(data, list) and len(data) == 1 else []
            value = _operand_value(arguments[1]) if len(arguments) > 1 and arguments[0] == "args" else None
            if value is None:
                raise ValueError(f"cannot read the expression of a drilldown off the page: {_show(pipeline)}")
            yield value
        for operand in command:
            if isinstance(operand, list):
                yield from _action_queries(operand)


def _operand_value(operand: Operand) -> str | None:
    if isinstance(operand, list):
        return _pipeline_value(operand)
    if operand[:1] in ('"', "`"):
        return _unquote(operand)
    return None


def _pipeline_value(pipeline: list[Command]) -> str | None:
    """The string a pipeline yields, when the page fixes it: a literal, or `printf FORMAT args...` with
    stand-ins for the arguments."""
    if len(pipeline) != 1:
        return None
    command = pipeline[0]
    if len(command) == 1:
        return _operand_value(command[0])
    if command[0] == "printf" and isinstance(command[1], str):
        format_ = _operand_value(command[1])
        return None if format_ is None else _PRINTF_VERB.sub(_printf_stand_in, format_)
    return None


def _printf_stand_in(verb: re.Match[str]) -> str:
    kind = verb.group(1)
    if kind == "%":
        return "%"
    if kind in "dfgeFGEx":
        return NUMERIC_STAND_IN
    return f'"{STAND_IN}"' if kind == "q" else STAND_IN


def _render_time_stand_ins(text: str) -> str:
    """A JavaScript string of the page as the browser gets it, a template action in it stood in for."""
    return _GO_ACTION.sub(STAND_IN, text)


def _unquote(literal: str) -> str:
    if literal.startswith("`"):
        return literal[1:-1]
    escapes = {"n": "\n", "t": "\t"}
    return re.sub(r"\\(.)", lambda m: escapes.get(m.group(1), m.group(1)), literal[1:-1])


def _show(pipeline: list[Command]) -> str:
    return " | ".join(" ".join(o if isinstance(o, str) else f"({_show(o)})" for o in c) for c in pipeline)


def metric_names(expr: str) -> set[str]:
    """The metric names `expr` selects: identifiers that are not functions, aggregations, keywords, label
    names (in matchers, `by (...)`, `on (...)`, ...) or durations."""
    text = _PROMQL_STRING.sub('""', expr)
    text = _PROMQL_MATCHERS.sub(" ", text)
    text = _PROMQL_BRACKETS.sub(" ", text)
    text = _PROMQL_LABEL_LIST.sub(" ", text)
    names = set()
    for match in _PROMQL_IDENTIFIER.finditer(text):
        name = match.group(0)
        followed_by = text[match.end() :].lstrip()[:1]
        if followed_by != "(" and name.lower() not in _PROMQL_KEYWORDS:
            names.add(name)
    return names
