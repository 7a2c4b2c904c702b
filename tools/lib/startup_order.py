"""The functions of one program that callgrind saw executed, for lld's --symbol-ordering-file.

Usage: startup_order.py PROGRAM LINK_INPUTS... -- PROFILE.callgrind...

PROFILEs are callgrind runs of PROGRAM with --demangle=no; LINK_INPUTS are the object files and
archives it was linked from. Prints one mangled name per line: the functions of PROGRAM's own
object executed in any run, most executed instructions first, so that the hottest code shares
pages. A function that shares its input section with others (an object built without function
sections, as the Swift runtime's C++ members are) comes after all the others: lld moves the whole
section, code that the start does not run included, so it must not split the rest; moving those
sections next to each other still gathers the runtime code that the start runs.
"""
import collections
import os
import re
import subprocess
import sys

arguments = sys.argv[1:]
separator = arguments.index("--")
program, link_inputs, profiles = os.path.basename(arguments[0]), arguments[1:separator], arguments[separator + 1:]

# Functions that have an input section of their own: ".text.<name>" (or a prefixed form such as
# ".text.unlikely.<name>").
own_section = set()
shared_section = set()
for path in link_inputs:
    table = subprocess.run(["objdump", "-t", path], capture_output=True, text=True).stdout
    for line in table.splitlines():
        # "0000000000000000 g     F .text.$sSS4hash...\t0000000000000041 $sSS4hash..."
        match = re.match(r"[0-9a-f]+ .{6}F (\S+)\t[0-9a-f]+ (?:\.hidden )?(\S+)$", line)
        if match:
            section, name = match.groups()
            (own_section if section.endswith("." + name) else shared_section).add(name)

cost = collections.Counter()
for path in profiles:
    objects, functions = {}, {}
    current_object = current_function = None
    after_call = False
    with open(path) as lines:
        for line in lines:
            # The line after "calls=" is the callee's inclusive cost, not this function's.
            if after_call:
                after_call = False
                continue
            if line.startswith("calls="):
                after_call = True
                continue
            # "ob=(3) /path" names an object; "fn=(12) name" a function; "cob="/"cfn=" a callee's.
            match = re.match(r"(c?)(ob|fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
            if match:
                callee, kind, number, name = match.groups()
                table = objects if kind == "ob" else functions
                if name:
                    table[number] = name
                if not callee:
                    if kind == "ob":
                        current_object = objects[number]
                    else:
                        in_program = os.path.basename(current_object or "") == program
                        current_function = functions[number] if in_program else None
                        if current_function:
                            cost[current_function] += 0
                continue
            if current_function and (line[:1].isdigit() or line[:1] in "+-*"):
                fields = line.split()
                if len(fields) >= 2 and fields[1].isdigit():
                    cost[current_function] += int(fields[1])

executed = [name for name, _ in sorted(cost.items(), key=lambda item: (-item[1], item[0]))]
for name in executed:
    if name in own_section and name not in shared_section:
        print(name)
for name in executed:
    if name not in own_section or name in shared_section:
        print(name)
