# Turn one OpenCL C file (IN) into a C file (OUT) defining `const char ocl_src_NAME[]` (hex bytes + NUL), so
# no quoting of the kernel text is ever needed.
file(READ ${IN} _hex HEX)
string(LENGTH "${_hex}" _len)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _bytes "${_hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" _bytes "${_bytes}")
file(WRITE ${OUT} "/* generated from ${IN} by embed_cl.cmake: do not edit */\nextern const char ocl_src_${NAME}[];\nconst char ocl_src_${NAME}[] = {\n${_bytes}0x00};\n")
