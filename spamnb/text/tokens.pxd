# Beside the source for Cython (setup.py): the helpers the tokeniser calls for each field and part,
# called inside the module as C functions, not through Python's calls (html_to_text stays a
# Python call: tests plant a fault in its place).
cpdef strip_invisible(markup)
cpdef unescape(text)
cpdef subject_pairs(words)
cpdef remember(memo, key, value, size, limit=*)
cpdef received_tokens(value, words=*)
cpdef dotted_chunks(value, words)
cpdef url_tokens(text)
cpdef encodes(text, charset)
