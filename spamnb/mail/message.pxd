# Beside the source for Cython (setup.py): the helpers the reader calls for each message and part,
# called inside the module as C functions, not through Python's calls (single_part_of and
# multipart_of stay Python calls: tests put stand-ins in their place).
cpdef read_part(text)
cpdef without_line_end(text)
cpdef unquote(value)
cpdef codec_name(charset)
cpdef decode_bytes(data, charset)

# A one-part message's fields in a C struct, its methods called through the class's table
# where the reader knows the type: one is made for each message and part.
cdef class SinglePart:
    cdef public object headers, payload, content_type, encoding
    cpdef plain(self)
    cpdef get_content_type(self)
    cpdef param(self, wanted)
    cpdef get_content_charset(self)
    cpdef boundary(self)
    cpdef get_payload(self, decode)
