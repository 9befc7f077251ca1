cmake_minimum_required(VERSION 3.25)
# Runs one llmsim command line with --html (and --json) and checks the page as a reader would get it:
#   - it is one self-contained file (no script, style or image fetched from elsewhere);
#   - it carries the very document --json wrote (parsed and compared, not matched as text);
#   - opened in headless Chromium, its script ran without errors or console.error calls and every chart it
#     set out to draw left pixels on its canvas (report.js publishes data-status, data-charts-expected and
#     data-charts-drawn on <body>), at least MIN_CHARTS of them;
#   - a screenshot is kept beside the page (<OUT>.png) for people to look at.
#   -DLLMSIM=<exe> -DARGS="a|b|c" -DEXPECT_RC=<n> -DOUT=<path without extension> -DMIN_CHARTS=<n>
#   -DCHROMIUM=<chromium executable, or empty: the browser checks are skipped with "SKIP: no chromium">
string(REPLACE "|" ";" args "${ARGS}")
file(REMOVE "${OUT}.html" "${OUT}.json" "${OUT}.png")
execute_process(COMMAND ${LLMSIM} ${args} --html=${OUT}.html --json=${OUT}.json RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(context "command: llmsim ${args} --html=${OUT}.html --json=${OUT}.json\n--- stderr ---\n${err}")
if(NOT "${rc}" STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "exit code ${rc}, expected ${EXPECT_RC}\n${context}")
endif()
file(READ "${OUT}.html" html)
file(READ "${OUT}.json" json)

# Self-contained: nothing loaded from a URL or another file.
if(html MATCHES "(src|href)=[\"']?[a-z]+:")
  message(FATAL_ERROR "${OUT}.html loads something from elsewhere (${CMAKE_MATCH_0}); a report must open offline")
endif()
if(NOT html MATCHES "Chart\\.js v[0-9]")
  message(FATAL_ERROR "${OUT}.html does not inline Chart.js")
endif()

# The embedded document is the JSON document.
set(open_tag "<script id=\"llmsim-document\" type=\"application/json\">")
string(FIND "${html}" "${open_tag}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${OUT}.html holds no <script id=\"llmsim-document\">")
endif()
string(LENGTH "${open_tag}" tag_len)
math(EXPR start "${at} + ${tag_len}")
string(SUBSTRING "${html}" ${start} -1 rest)
string(FIND "${rest}" "</script>" stop)
string(SUBSTRING "${rest}" 0 ${stop} embedded)
string(REPLACE "<\\/" "</" embedded "${embedded}")
string(JSON same ERROR_VARIABLE parse_error EQUAL "${embedded}" "${json}")
if(parse_error)
  message(FATAL_ERROR "the embedded document does not parse: ${parse_error}")
endif()
if(NOT same)
  message(FATAL_ERROR "the document in ${OUT}.html differs from the --json output ${OUT}.json")
endif()

if(NOT CHROMIUM)
  message("SKIP: no chromium (Debian package chromium; tools/setup installs it): the page was not opened")
  return()
endif()
# A profile folder of its own: tests run in parallel, and Chromium locks its profile.
set(profile "${OUT}.chromium-profile")
file(REMOVE_RECURSE "${profile}")
set(browser ${CHROMIUM} --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir=${profile})
execute_process(COMMAND ${browser} --dump-dom "file://${OUT}.html" RESULT_VARIABLE brc OUTPUT_VARIABLE dom
                ERROR_VARIABLE berr TIMEOUT 120)
if(NOT brc EQUAL 0)
  message(FATAL_ERROR "chromium --dump-dom failed (${brc}):\n${berr}")
endif()
if(NOT dom MATCHES "<body data-charts-expected=\"([0-9]+)\" data-charts-drawn=\"([0-9]+)\" data-errors=\"([0-9]+)\" data-status=\"([a-z]+)\">")
  message(FATAL_ERROR "the report's script did not finish (no status on <body>):\n${berr}")
endif()
set(expected ${CMAKE_MATCH_1})
set(drawn ${CMAKE_MATCH_2})
set(errors ${CMAKE_MATCH_3})
set(status ${CMAKE_MATCH_4})
string(REGEX MATCH "<pre id=\"llmsim-status\"[^>]*>[^<]*" detail "${dom}")
if(NOT status STREQUAL "ok")
  message(FATAL_ERROR "the report failed in Chromium: ${drawn} of ${expected} charts drew, ${errors} errors\n${detail}")
endif()
if(expected LESS MIN_CHARTS)
  message(FATAL_ERROR "the report drew ${expected} charts, expected at least ${MIN_CHARTS}\n${detail}")
endif()
# The verdict leads the page (report::add_verdict): the element right after the title, coloured by `ok`.
string(JSON verdict_ok ERROR_VARIABLE no_verdict GET "${json}" verdict ok)
if(NOT no_verdict)
  set(want_class "bad")
  if(verdict_ok STREQUAL "ON" OR verdict_ok STREQUAL "true")
    set(want_class "ok")
  endif()
  if(NOT dom MATCHES "</h1><p class=\"verdict ${want_class}\">")
    message(FATAL_ERROR "the page does not lead with the verdict (<p class=\"verdict ${want_class}\"> after the title)")
  endif()
endif()
execute_process(COMMAND ${browser} --window-size=1280,2400 "--screenshot=${OUT}.png" "file://${OUT}.html"
                RESULT_VARIABLE src ERROR_VARIABLE serr OUTPUT_QUIET TIMEOUT 120)
if(NOT src EQUAL 0 OR NOT EXISTS "${OUT}.png")
  message(FATAL_ERROR "chromium --screenshot failed (${src}):\n${serr}")
endif()
file(REMOVE_RECURSE "${profile}")
message("${OUT}.html: ${drawn} of ${expected} charts drew, no errors; screenshot ${OUT}.png")
