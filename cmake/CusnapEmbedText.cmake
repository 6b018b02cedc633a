# cusnap_embed_text(INPUT <text file> OUTPUT <.inc> NAME <identifier> COMMENT <text>): a custom
# command writing OUTPUT, `constexpr const char NAME[] = R"cusnap_text(<the file>)cusnap_text";`,
# from INPUT at build time (embed_text.cmake), for text a binary carries inside itself. The one
# rule for it: the interceptor's snapshot hashing kernel, the reproducer's xxh3_128.h (extract/).
function(cusnap_embed_text)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "INPUT;OUTPUT;NAME;COMMENT" "")
  set(script ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/embed_text.cmake)
  add_custom_command(
    OUTPUT ${arg_OUTPUT}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${arg_INPUT} -DOUTPUT=${arg_OUTPUT} -DNAME=${arg_NAME}
            -P ${script}
    DEPENDS ${arg_INPUT} ${script}
    COMMENT "${arg_COMMENT}"
    VERBATIM)
endfunction()
