# Beside the source for Cython (setup.py): the helpers unstamping and the digests call for each message,
# called inside the module as C functions, not through Python's calls.
cpdef split_message(data)
cpdef message_cuts(data)
cpdef lf_cuts(data)
cpdef digested(data)
cpdef fingerprint(head, rest, limit, trailing)
