#!/usr/bin/env python3
"""Reads a Catch2 JUnit report for tests/device/device-check.sh (stdlib
only).

  junit_report.py first-failed-case REPORT.xml
      the first failing test case, as a Catch2 test spec (its commas and
      brackets escaped); nothing where none failed or the report is missing
  junit_report.py summary REPORT.xml
      the first failures' messages, then one line
      "N cases, F failed[: first case]"

Exit 0 either way: a missing or broken report is said in the output.
"""
import sys
import xml.etree.ElementTree as ET


def failed(case):
    return case.find("failure") is not None or case.find("error") is not None


def first_failed_case(path):
    try:
        root = ET.parse(path).getroot()
    except Exception:
        return
    cases = list(root.iter("testcase"))
    names = {c.get("name") for c in cases}
    for case in cases:
        if failed(case):
            name = case.get("name")
            # A section's failure is reported as "test case/section": the
            # shortest "/"-prefix that is a test case of its own.
            parts = name.split("/")
            for i in range(1, len(parts)):
                if "/".join(parts[:i]) in names:
                    name = "/".join(parts[:i])
                    break
            for c in "\\,[]":
                name = name.replace(c, "\\" + c)
            print(name)
            break


def summary(path):
    try:
        root = ET.parse(path).getroot()
    except Exception as e:
        print("no report (%s: the tests crashed?)" % e.__class__.__name__)
        return
    cases = list(root.iter("testcase"))
    bad = [c for c in cases if failed(c)]
    for c in bad[:3]:
        for f in list(c.iter("failure")) + list(c.iter("error")):
            print("FAILED %s: %s\n%s" % (c.get("name"), f.get("message", ""),
                                         (f.text or "").strip()[:600]))
    print("%d cases, %d failed%s" % (len(cases), len(bad),
          (": " + bad[0].get("name")) if bad else ""))


if __name__ == "__main__":
    commands = {"first-failed-case": first_failed_case, "summary": summary}
    if len(sys.argv) != 3 or sys.argv[1] not in commands:
        sys.exit("usage: junit_report.py first-failed-case|summary REPORT.xml")
    commands[sys.argv[1]](sys.argv[2])
