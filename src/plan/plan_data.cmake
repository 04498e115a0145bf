# scalebench plan's GPU database, fabric table, calibration and PyTorch memory lines (src/plan/data/*.json), compiled into the library as
# string constants so that `scalebench plan` runs without the source tree. Editing a JSON file reconfigures.
foreach(sb_plan_name gpus fabrics calibration pytorch_memory)
  set(sb_plan_file ${CMAKE_CURRENT_SOURCE_DIR}/src/plan/data/${sb_plan_name}.json)
  string(TOUPPER ${sb_plan_name} sb_plan_upper)
  file(READ ${sb_plan_file} SB_PLAN_${sb_plan_upper}_JSON)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${sb_plan_file})
endforeach()
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/src/plan/plan_data.cpp.in ${CMAKE_CURRENT_BINARY_DIR}/generated/plan_data.cpp
               @ONLY)
list(APPEND SB_CORE_SOURCES ${CMAKE_CURRENT_BINARY_DIR}/generated/plan_data.cpp)
