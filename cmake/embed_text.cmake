# cmake -DINPUT=<text file> -DOUTPUT=<.inc> -DNAME=<identifier> -P embed_text.cmake
# Writes `constexpr const char NAME[] = R"cusnap_text(<the file>)cusnap_text";`, for text a
# binary carries inside itself; run through cusnap_embed_text() (CusnapEmbedText.cmake).
file(READ ${INPUT} text)
string(FIND "${text}" ")cusnap_text\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string's delimiter")
endif()
file(WRITE ${OUTPUT}.tmp "// Generated from ${INPUT} by embed_text.cmake.\n"
  "constexpr const char ${NAME}[] = R\"cusnap_text(${text})cusnap_text\";\n")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUTPUT}.tmp)
