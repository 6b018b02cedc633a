"""Replay reports (`cusnap replay --report`, docs/schemas/replay-report.md) and comparisons
(`cusnap compare --json`, docs/schemas/compare.md): JSON documents, checked for their schema name
and a version this package knows, then handed out as plain dicts with a few conveniences."""
import json

REPLAY_REPORT_SCHEMA = "cusnap-replay-report"
COMPARE_SCHEMA = "cusnap-compare"
# The newest versions these docs describe; newer versions only add fields (docs/schemas/README.md).
KNOWN_VERSIONS = {REPLAY_REPORT_SCHEMA: 2, COMPARE_SCHEMA: 1}


class ReportError(ValueError):
    """Not a cusnap report of a known schema."""


class Report(dict):
    """A report's JSON object. `schema`, `version`; `launches` is the list of launch objects."""

    schema = property(lambda self: self["schema"])
    version = property(lambda self: self["schema_version"])
    launches = property(lambda self: self.get("launches", []))


class ReplayReport(Report):
    @property
    def verified(self) -> bool:
        """At least one result was compared and none differed (`verification.result` "matched")."""
        return self.get("verification", {}).get("result") == "matched"


class Comparison(Report):
    flagged = property(lambda self: self["flagged"])
    results_differ = property(lambda self: self["results_differ"])


_TYPES = {REPLAY_REPORT_SCHEMA: ReplayReport, COMPARE_SCHEMA: Comparison}


def read_report(path, expect=None) -> Report:
    """Reads a replay report or a comparison; `expect` names the schema it must be."""
    try:
        with open(path) as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise ReportError("%s: not JSON: %s" % (path, e)) from None
    if not isinstance(data, dict) or data.get("schema") not in _TYPES:
        raise ReportError("%s: not a cusnap report (schema %r)" %
                          (path, data.get("schema") if isinstance(data, dict) else None))
    if expect is not None and data["schema"] != expect:
        raise ReportError("%s: a %s, not a %s" % (path, data["schema"], expect))
    version = data.get("schema_version")
    if not isinstance(version, int) or version < 1:
        raise ReportError("%s: schema_version %r" % (path, version))
    return _TYPES[data["schema"]](data)


def read_replay_report(path) -> ReplayReport:
    return read_report(path, REPLAY_REPORT_SCHEMA)


def read_comparison(path) -> Comparison:
    return read_report(path, COMPARE_SCHEMA)
