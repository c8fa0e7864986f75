#!/usr/bin/env python3
"""Strict check of the Prometheus text exposition format (0.0.4) as
`mdcast stat --prometheus` writes it, without prometheus_client or promtool.

  promtext_check.py FILE [--require-labels pid,role,...]

Checks what a scrape or node_exporter's textfile collector would reject
(names, label syntax and escapes, values, HELP/TYPE at most once and before
the family's samples, a family's samples together, no series twice) and
mdcast's own conventions (every family has HELP and TYPE, counters end in
_total and are never negative, every sample carries the required labels).
A histogram's samples are <name>_bucket{le=...}, <name>_sum and <name>_count:
per series, buckets in increasing le, cumulative (never decreasing), a
+Inf bucket equal to _count, a _sum; no other family carries an le label.
Prints one line per problem and exits 1 if there is any."""
import math
import re
import sys

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def parse_labels(s, pos, where):
    """Parses {a="b",...} starting at s[pos] == '{'; returns (dict, next pos)."""
    labels = {}
    pos += 1
    while True:
        if pos < len(s) and s[pos] == "}":
            return labels, pos + 1
        m = LABEL.match(s, pos)
        if not m:
            raise ValueError(f"{where}: bad label name at column {pos + 1}")
        name = m.group(0)
        if name.startswith("__"):
            raise ValueError(f"{where}: label name {name} is reserved")
        pos = m.end()
        if s[pos:pos + 2] != '="':
            raise ValueError(f"{where}: expected =\" after label {name}")
        pos += 2
        value = []
        while True:
            if pos >= len(s):
                raise ValueError(f"{where}: unterminated value of label {name}")
            c = s[pos]
            if c == "\\":
                nxt = s[pos + 1:pos + 2]
                if nxt not in ('\\', '"', 'n'):
                    raise ValueError(f"{where}: bad escape \\{nxt} in label {name}")
                value.append({"\\": "\\", '"': '"', "n": "\n"}[nxt])
                pos += 2
            elif c == '"':
                pos += 1
                break
            else:
                value.append(c)
                pos += 1
        if name in labels:
            raise ValueError(f"{where}: label {name} twice")
        labels[name] = "".join(value)
        if pos < len(s) and s[pos] == ",":
            pos += 1
        elif pos < len(s) and s[pos] == "}":
            continue
        else:
            raise ValueError(f"{where}: expected , or }} after label {name}")


def parse_value(v, where):
    if v in ("NaN", "+Inf", "-Inf", "Inf"):
        return float(v.replace("Inf", "inf").replace("NaN", "nan"))
    if not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", v):
        raise ValueError(f"{where}: value {v!r} is not a float")
    return float(v)


HIST_SUFFIXES = ("_bucket", "_sum", "_count")


def family_of(name, types):
    """The family a sample belongs to: a histogram's _bucket/_sum/_count
    samples belong to the histogram's name."""
    for suffix in HIST_SUFFIXES:
        base = name[:-len(suffix)]
        if name.endswith(suffix) and types.get(base) == "histogram":
            return base, suffix
    return name, ""


def check_histograms(hists):
    """hists: {(family, labels without le): {"buckets": [(le, value)], "sum": v, "count": v}}"""
    problems = []
    for (name, labels), h in hists.items():
        where = f"{name}{dict(labels)}"
        les = [le for le, _ in h.get("buckets", [])]
        values = [v for _, v in h.get("buckets", [])]
        if not les or les[-1] != math.inf:
            problems.append(f"{where}: no +Inf bucket last")
        if les != sorted(les) or len(set(les)) != len(les):
            problems.append(f"{where}: buckets not in increasing le")
        if any(b < a for a, b in zip(values, values[1:])):
            problems.append(f"{where}: buckets not cumulative: {values}")
        if "count" not in h:
            problems.append(f"{where}: no _count")
        elif les and les[-1] == math.inf and values[-1] != h["count"]:
            problems.append(f"{where}: +Inf bucket {values[-1]} != _count {h['count']}")
        if "sum" not in h:
            problems.append(f"{where}: no _sum")
    return problems


def check(text, required):
    problems = []
    hists = {}
    helps, types, seen_series = {}, {}, set()
    families_done, current, sampled = set(), None, set()
    if text and not text.endswith("\n"):
        problems.append("the last line does not end in a newline")
    for n, line in enumerate(text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"), 1):
        where = f"line {n}"
        try:
            if line == "":
                raise ValueError(f"{where}: empty line")
            if line.startswith("#"):
                parts = line.split(" ", 3)
                if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                    kind, name = parts[1], parts[2]
                    if not NAME.fullmatch(name):
                        raise ValueError(f"{where}: bad metric name {name!r}")
                    rest = parts[3] if len(parts) > 3 else ""
                    table = helps if kind == "HELP" else types
                    if name in table:
                        raise ValueError(f"{where}: second {kind} for {name}")
                    if name in sampled:
                        raise ValueError(f"{where}: {kind} for {name} after its samples")
                    if kind == "TYPE" and rest not in TYPES:
                        raise ValueError(f"{where}: unknown type {rest!r}")
                    if kind == "HELP":
                        if re.search(r"\\[^\\n]", rest.replace("\\\\", "")):
                            raise ValueError(f"{where}: bad escape in HELP of {name}")
                        if not rest.strip():
                            raise ValueError(f"{where}: empty HELP for {name}")
                    table[name] = rest
                continue
            m = NAME.match(line)
            if not m:
                raise ValueError(f"{where}: sample without a metric name")
            name, pos = m.group(0), m.end()
            labels = {}
            if pos < len(line) and line[pos] == "{":
                labels, pos = parse_labels(line, pos, where)
            if line[pos:pos + 1] != " ":
                raise ValueError(f"{where}: expected a space before the value")
            fields = line[pos + 1:].split(" ")
            if len(fields) not in (1, 2) or fields[0] == "":
                raise ValueError(f"{where}: expected a value and at most a timestamp")
            value = parse_value(fields[0], where)
            if len(fields) == 2 and not re.fullmatch(r"-?\d+", fields[1]):
                raise ValueError(f"{where}: bad timestamp {fields[1]!r}")
            sample_name = name
            name, suffix = family_of(name, types)
            if name != current:
                if name in families_done:
                    raise ValueError(f"{where}: samples of {name} not together")
                if current:
                    families_done.add(current)
                current = name
            sampled.add(name)
            if name not in types or name not in helps:
                raise ValueError(f"{where}: {name} has no {'TYPE' if name not in types else 'HELP'} before its samples")
            series = (sample_name, tuple(sorted(labels.items())))
            if series in seen_series:
                raise ValueError(f"{where}: series {sample_name}{labels} twice")
            seen_series.add(series)
            if types[name] == "histogram":
                if not suffix:
                    raise ValueError(f"{where}: histogram {name} sample without _bucket, _sum or _count")
                if (suffix == "_bucket") != ("le" in labels):
                    raise ValueError(f"{where}: {sample_name} {'lacks' if suffix == '_bucket' else 'has'} an le label")
                rest = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
                h = hists.setdefault((name, rest), {})
                if suffix == "_bucket":
                    h.setdefault("buckets", []).append((parse_value(labels["le"], where), value))
                else:
                    h[suffix[1:]] = value
                if value < 0 or math.isnan(value) and suffix != "_sum":
                    raise ValueError(f"{where}: {sample_name} is {value}")
            elif "le" in labels:
                raise ValueError(f"{where}: {name} is no histogram but has an le label")
            if types[name] == "counter":
                if not name.endswith("_total"):
                    raise ValueError(f"{where}: counter {name} does not end in _total")
                if value < 0 or math.isnan(value):
                    raise ValueError(f"{where}: counter {name} is {value}")
            missing = [l for l in required if l not in labels]
            if missing:
                raise ValueError(f"{where}: {name} lacks labels {','.join(missing)}")
        except ValueError as e:
            problems.append(str(e))
    for name in types:
        if name not in helps:
            problems.append(f"{name}: TYPE without HELP")
    problems += check_histograms(hists)
    return problems, len(seen_series), len(types)


def main():
    args = sys.argv[1:]
    required = []
    if "--require-labels" in args:
        i = args.index("--require-labels")
        required = [l for l in args[i + 1].split(",") if l]
        del args[i:i + 2]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    with open(args[0], encoding="utf-8") as f:
        text = f.read()
    problems, series, families = check(text, required)
    for p in problems:
        print(f"{args[0]}: {p}")
    if not problems:
        print(f"{args[0]}: ok, {families} families, {series} series")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
