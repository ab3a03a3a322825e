# Runs `npm ci` in DIR when DIR/node_modules is missing or older than the lock file, then
# touches STAMP. cmake -DNPM=npm -DDIR=webui -DSTAMP=file -P webui_npm_ci.cmake
cmake_minimum_required(VERSION 3.25)

set(installed "${DIR}/node_modules/.package-lock.json")  # npm writes it last
if(NOT EXISTS "${installed}" OR "${DIR}/package-lock.json" IS_NEWER_THAN "${installed}")
  message(STATUS "webui: npm ci in ${DIR}")
  execute_process(COMMAND "${NPM}" ci --no-audit --no-fund WORKING_DIRECTORY "${DIR}"
                  RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR
      "webui: `npm ci` failed in ${DIR} (${result}). It needs the npm registry once, to fill "
      "webui/node_modules; or configure with -DPAGEDLLM_WEBUI=OFF to build without the page.")
  endif()
endif()
file(TOUCH "${STAMP}")
