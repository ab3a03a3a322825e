# The chat page (webui/): esbuild bundles it into ${CMAKE_BINARY_DIR}/webui/dist and
# embed_files.cmake turns that folder into a C++ source compiled into pagedllm_server, so the
# binary serves it with no files beside it. Included by the top-level CMakeLists.txt.
option(PAGEDLLM_WEBUI "Build the chat page into pagedllm serve (needs node and npm)" ON)

set(PAGEDLLM_WEBUI_DIR ${PROJECT_SOURCE_DIR}/webui)
set(PAGEDLLM_WEBUI_OUT ${CMAKE_BINARY_DIR}/webui)
set(PAGEDLLM_WEBUI_CPP ${PAGEDLLM_WEBUI_OUT}/webui_bundle.cpp)
set(PAGEDLLM_EMBED_SCRIPT ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake)

if(NOT PAGEDLLM_WEBUI)
  # An empty table: / answers 404 as with --no-webui.
  execute_process(COMMAND ${CMAKE_COMMAND} -DOUTPUT=${PAGEDLLM_WEBUI_CPP} -P ${PAGEDLLM_EMBED_SCRIPT}
                  COMMAND_ERROR_IS_FATAL ANY)
  target_sources(pagedllm_server PRIVATE ${PAGEDLLM_WEBUI_CPP})
  return()
endif()

find_program(PAGEDLLM_NODE node)
find_program(PAGEDLLM_NPM npm)
if(NOT PAGEDLLM_NODE OR NOT PAGEDLLM_NPM)
  message(FATAL_ERROR
    "The chat page (webui/) is built with node and npm, and neither may be missing: run "
    "scripts/install-deps.sh (make deps), or configure with -DPAGEDLLM_WEBUI=OFF to build a "
    "server without the page.")
endif()

# npm ci writes into the source tree (webui/node_modules) and runs only when node_modules is
# missing or older than the lock file; the stamp tells the bundle step it has run.
add_custom_command(
  OUTPUT ${PAGEDLLM_WEBUI_OUT}/npm-ci.stamp
  COMMAND ${CMAKE_COMMAND} -DNPM=${PAGEDLLM_NPM} -DDIR=${PAGEDLLM_WEBUI_DIR}
          -DSTAMP=${PAGEDLLM_WEBUI_OUT}/npm-ci.stamp -P ${PROJECT_SOURCE_DIR}/cmake/webui_npm_ci.cmake
  DEPENDS ${PAGEDLLM_WEBUI_DIR}/package.json ${PAGEDLLM_WEBUI_DIR}/package-lock.json
          ${PROJECT_SOURCE_DIR}/cmake/webui_npm_ci.cmake
  COMMENT "webui: npm ci (only when webui/node_modules is missing or stale)"
  VERBATIM)

file(GLOB_RECURSE PAGEDLLM_WEBUI_SOURCES CONFIGURE_DEPENDS ${PAGEDLLM_WEBUI_DIR}/src/*)
add_custom_command(
  OUTPUT ${PAGEDLLM_WEBUI_CPP}
  COMMAND ${PAGEDLLM_NODE} ${PAGEDLLM_WEBUI_DIR}/build.mjs ${PAGEDLLM_WEBUI_OUT}/dist
  COMMAND ${CMAKE_COMMAND} -DINPUT_DIR=${PAGEDLLM_WEBUI_OUT}/dist -DOUTPUT=${PAGEDLLM_WEBUI_CPP}
          -P ${PAGEDLLM_EMBED_SCRIPT}
  DEPENDS ${PAGEDLLM_WEBUI_OUT}/npm-ci.stamp ${PAGEDLLM_WEBUI_SOURCES}
          ${PAGEDLLM_WEBUI_DIR}/build.mjs ${PAGEDLLM_EMBED_SCRIPT}
  WORKING_DIRECTORY ${PAGEDLLM_WEBUI_DIR}
  COMMENT "webui: bundling the chat page (esbuild) and embedding it"
  VERBATIM)
# The page alone: cmake --build BUILD --target pagedllm_webui.
add_custom_target(pagedllm_webui DEPENDS ${PAGEDLLM_WEBUI_CPP})
target_sources(pagedllm_server PRIVATE ${PAGEDLLM_WEBUI_CPP})
