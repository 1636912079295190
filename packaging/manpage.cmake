# manpage.cmake - a command's manual page from its own --help, so the
# page and the command cannot disagree; gzip -9n (no name, no time), as
# Debian ships pages.
#
#   cmake -DBIN=path -DNAME=lark-edge -DSUMMARY="..." -DVERSION=0.1.0
#         -DOUT=lark-edge.1.gz -P manpage.cmake
# A sanitizer build's binaries: a leak at a usage exit is not the page's
# concern (the tests look for leaks).
set(ENV{ASAN_OPTIONS} "detect_leaks=0")
# The services answer --help with their usage and exit 2 (a usage error),
# larkctl with 0: anything up to 2 with some text is a page; a binary
# that cannot start (127, a signal) is not.
execute_process(COMMAND "${BIN}" --help OUTPUT_VARIABLE help
                ERROR_VARIABLE help RESULT_VARIABLE rc)
if(NOT rc MATCHES "^[012]$" OR help STREQUAL "")
  message(FATAL_ERROR "${NAME} --help failed (${rc}): ${help}")
endif()
# roff: a backslash is \e; a line starting with . or ' is a request
string(REPLACE "\\" "\\e" help "${help}")
string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" help "${help}")
string(TOUPPER "${NAME}" upper)
string(REPLACE "-" "\\-" name_roff "${NAME}")
set(see ".BR larkctl (1)")
if(NAME STREQUAL "larkctl")
  set(see ".BR lark\\-edge (1)")
endif()
file(WRITE "${OUT}.tmp" ".TH ${upper} 1 \"\" \"larkbus ${VERSION}\" \"larkbus\"
.SH NAME
${name_roff} \\- ${SUMMARY}
.SH SYNOPSIS
.nf
${help}.fi
.SH DESCRIPTION
.B ${name_roff}
is part of larkbus, an event-sourced control plane on NATS JetStream.
The options above are what
.B ${name_roff} \\-\\-help
prints; /usr/share/doc/larkbus/README.md and
/usr/share/doc/larkbus/docs/operations.md describe how the parts run
together.
.SH SEE ALSO
${see}
")
execute_process(COMMAND gzip -9n -c "${OUT}.tmp" OUTPUT_FILE "${OUT}"
                RESULT_VARIABLE rc)
file(REMOVE "${OUT}.tmp")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gzip ${OUT} failed")
endif()
