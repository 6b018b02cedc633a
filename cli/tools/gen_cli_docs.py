#!/usr/bin/env python3
"""Man pages and shell completions of `cusnap`, generated at build time from the built binary's
own --help (CLI11 has no generator of its own), so they list exactly the subcommands and options
the binary has: cusnap(1), cusnap-<subcommand>(1) for each, a bash and a zsh completion.

Usage: gen_cli_docs.py --cusnap PATH --version X.Y.Z --man-dir DIR --bash FILE --zsh FILE
"""
import argparse
import os
import re
import subprocess
import sys

SECTION = re.compile(r"^([A-Z][A-Za-z ]*):$")


def help_of(cusnap, *args):
    out = subprocess.run([cusnap, *args, "--help"], check=True, capture_output=True, text=True,
                         env=dict(os.environ, COLUMNS="100")).stdout
    return out.splitlines()


def parse_help(lines):
    """CLI11's help: a description, `Usage: ...`, then sections ("Options:", "Subcommands:",
    "Positionals:") of two-space-indented entries whose text starts after a run of spaces (or on
    the next, deeper indented line), then free text (the footer)."""
    parsed = {"description": [], "usage": "", "sections": {}, "footer": []}
    section = None
    for line in lines:
        if line.startswith("Usage: "):
            parsed["usage"] = line[len("Usage: "):].split(" ", 1)[1] if " " in line[7:] else ""
            section = "after-usage"
            continue
        match = SECTION.match(line)
        if match and section is not None:
            section = match.group(1)
            parsed["sections"][section] = []
            continue
        if section is None:
            if line.strip():
                parsed["description"].append(line.strip())
        elif section == "after-usage" or not line.startswith("  "):
            if line.strip():
                parsed["footer"].append(line.strip())
                section = "footer"
        elif section != "footer":
            entries = parsed["sections"][section]
            if line.startswith("   ") and entries:  # continuation of the previous entry's text
                entries[-1][1] = (entries[-1][1] + " " + line.strip()).strip()
            else:
                name, _, text = line.strip().partition("  ")
                entries.append([name.strip(), text.strip()])
    return parsed


def option_flags(name):
    """'-o,--output TEXT REQUIRED' -> ['-o', '--output']."""
    return [f for f in name.split(" ", 1)[0].split(",") if f.startswith("-")]


def roff(text):
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'") else text


def man_page(title, name, summary, parsed, version, see_also):
    out = ['.TH %s 1 "" "cusnap %s" "User Commands"' % (title.upper(), version),
           ".SH NAME", "%s \\- %s" % (roff(name), roff(summary)), ".SH SYNOPSIS",
           ".B %s" % roff(name), roff(parsed["usage"]), ".SH DESCRIPTION",
           roff(" ".join(parsed["description"]))]
    for section, entries in parsed["sections"].items():
        out.append(".SH " + section.upper())
        for entry_name, text in entries:
            out += [".TP", ".B " + roff(entry_name), roff(text)]
    if parsed["footer"]:
        out += [".SH NOTES", roff(" ".join(parsed["footer"]))]
    if see_also:
        out += [".SH SEE ALSO", ", ".join("\\fB%s\\fR(1)" % roff(s) for s in see_also)]
    return "\n".join(out) + "\n"


def bash_completion(subcommands, options):
    cases = "\n".join("    %s) opts=%s ;;" % (sub, shell_quote(" ".join(options[sub])))
                      for sub in subcommands)
    return """# bash completion for cusnap (generated from `cusnap --help` by cli/tools/gen_cli_docs.py)
_cusnap() {
  local cur="${COMP_WORDS[COMP_CWORD]}" opts
  if ((COMP_CWORD == 1)); then
    COMPREPLY=($(compgen -W %s -- "$cur"))
    return
  fi
  case "${COMP_WORDS[1]}" in
%s
    *) opts="" ;;
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -o filenames -F _cusnap cusnap
""" % (shell_quote(" ".join(subcommands + ["--help", "--version"])), cases)


def shell_quote(text):
    return "'" + text.replace("'", "'\\''") + "'"


def zsh_text(text):
    return re.sub(r"([\[\]:\\'])", r"\\\1", text).replace("'", "")


def zsh_completion(subcommands, summaries, options, descriptions):
    described = "\n".join("    '%s:%s'" % (s, zsh_text(summaries[s])) for s in subcommands)
    cases = []
    for sub in subcommands:
        specs = " ".join("'%s[%s]'" % (flag, zsh_text(descriptions[sub].get(flag, "")))
                         for flag in options[sub])
        cases.append("    %s) _arguments %s '*:file:_files' ;;" % (sub, specs))
    return """#compdef cusnap
# zsh completion for cusnap (generated from `cusnap --help` by cli/tools/gen_cli_docs.py)
_cusnap() {
  local -a subcommands
  subcommands=(
%s
  )
  if ((CURRENT == 2)); then
    _describe 'cusnap subcommand' subcommands
    return
  fi
  case $words[2] in
%s
  esac
}
_cusnap "$@"
""" % (described, "\n".join(cases))


def write_if_changed(path, text):
    if os.path.exists(path) and open(path).read() == text:
        return
    with open(path, "w") as out:
        out.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cusnap", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--man-dir", required=True)
    ap.add_argument("--bash", required=True)
    ap.add_argument("--zsh", required=True)
    args = ap.parse_args()
    top = parse_help(help_of(args.cusnap))
    top["usage"] = "[OPTIONS] SUBCOMMAND [ARGS...]"
    entries = top["sections"].get("Subcommands", [])
    if not entries:
        sys.exit("gen_cli_docs.py: `cusnap --help` lists no subcommands")
    subcommands = [name for name, _ in entries]
    summaries = dict(entries)
    options, descriptions = {}, {}
    os.makedirs(args.man_dir, exist_ok=True)
    pages = ["cusnap-" + s for s in subcommands]
    write_if_changed(os.path.join(args.man_dir, "cusnap.1"),
                     man_page("cusnap", "cusnap", top["description"][0], top, args.version,
                              pages))
    for sub in subcommands:
        parsed = parse_help(help_of(args.cusnap, sub))
        parsed["description"] = parsed["description"] or [summaries[sub]]
        # "capture [OPTIONS] command..." -> "[OPTIONS] command..." (the name is bold before it)
        parsed["usage"] = parsed["usage"].split(" ", 1)[1] if " " in parsed["usage"] else ""
        flags = []
        descriptions[sub] = {}
        for name, text in parsed["sections"].get("Options", []):
            for flag in option_flags(name):
                flags.append(flag)
                descriptions[sub][flag] = text
        options[sub] = flags
        write_if_changed(os.path.join(args.man_dir, "cusnap-%s.1" % sub),
                         man_page("cusnap-" + sub, "cusnap " + sub, summaries[sub], parsed,
                                  args.version, ["cusnap"]))
    write_if_changed(args.bash, bash_completion(subcommands, options))
    write_if_changed(args.zsh, zsh_completion(subcommands, summaries, options, descriptions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
