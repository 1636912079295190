# Regenerates docs/events.md into the build tree and fails when it differs
# from the committed one. Run by ctest (schema_docs_current).
execute_process(COMMAND ${GEN} ${YAML} --docs ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "schemagen failed on ${YAML}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT} ${DOC}
                RESULT_VARIABLE diff)
if(NOT diff EQUAL 0)
  message(FATAL_ERROR "docs/events.md is out of date with schema/schema.yaml.\n"
          "Regenerate it with: cmake --build <build dir> --target schema-docs\n"
          "and commit the result.")
endif()
