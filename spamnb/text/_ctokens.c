/* The tokeniser's hot loops in C: a text's words, as spamnb.tokens.Tokenizer.words finds them,
 * and an HTML text's tags cut out, as tokens.TAG.sub(" ", text) cuts them.
 *
 * Python decides what is tokenised (which texts, lowercasing, CJK bigrams, prefixes); this
 * module only scans one str for the words of tokens.word_pattern and filters them, or for
 * tags.  It must give exactly the pure path's tokens: tests/test_ctokens.py and `make fuzz`
 * compare them.
 *
 * A word is a run of letters (str.isalnum(), the regex class [^\W_]) joined by single inner
 * apostrophes, dots and hyphens.  Words of min_len..max_len characters that are not in
 * `stop` are kept, in order; then, for each word longer than max_len, "skip:" + its first
 * character + its length in tens; each after `prefix` (a header field's name and colon).
 * With `lower`, the words of a one-byte (Latin-1) text are lowered as they are copied out:
 * those of text.lower(), which is Latin-1 again, character for character, with the same
 * letters (so no lowered copy of the whole text is made).  Plain CPython C API, no other
 * dependency.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* ASCII letters and digits. */
static unsigned char ascii_alnum[128];

static inline int is_letter(Py_UCS4 ch)
{
    return ch < 128 ? ascii_alnum[ch] : Py_UNICODE_ISALNUM(ch);
}

static inline int is_joiner(Py_UCS4 ch)
{
    return ch == '\'' || ch == '.' || ch == '-';
}

/* Letters and digits of the one-byte kind (Latin-1), looked up: most text is of that kind. */
static unsigned char latin1_alnum[256];
/* Each Latin-1 character's lowercase, which is Latin-1 too (str.lower of a one-byte text). */
static Py_UCS1 latin1_lower[256];

/* The next word of s[i:n]: its end, and its start at *start; -1 where there is none.  One
 * function per kind, so that the loops read the characters without a test of the kind. */
#define NEXT_WORD(NAME, TYPE, LETTER)                                                          \
    static inline Py_ssize_t NAME(const TYPE *s, Py_ssize_t n, Py_ssize_t i, Py_ssize_t *start) \
    {                                                                                          \
        while (i < n && !LETTER(s[i]))                                                         \
            i++;                                                                               \
        if (i >= n)                                                                            \
            return -1;                                                                         \
        *start = i;                                                                            \
        for (;;) {                                                                             \
            while (i < n && LETTER(s[i]))                                                      \
                i++;                                                                           \
            if (i + 1 < n && is_joiner(s[i]) && LETTER(s[i + 1]))                              \
                i++;                                                                           \
            else                                                                               \
                return i;                                                                      \
        }                                                                                      \
    }
#define LATIN1_LETTER(ch) latin1_alnum[ch]
NEXT_WORD(next_word_1, Py_UCS1, LATIN1_LETTER)
NEXT_WORD(next_word_2, Py_UCS2, is_letter)
NEXT_WORD(next_word_4, Py_UCS4, is_letter)

/* text[start:end] of a one-byte text, lowered: made of the smallest kind that holds it. */
static PyObject *
lowered_latin1(const Py_UCS1 *data, Py_ssize_t start, Py_ssize_t end)
{
    Py_UCS1 maxchar = 0;
    for (Py_ssize_t i = start; i < end; i++)
        if (latin1_lower[data[i]] > maxchar)
            maxchar = latin1_lower[data[i]];
    PyObject *out = PyUnicode_New(end - start, maxchar);
    if (out == NULL)
        return NULL;
    Py_UCS1 *dest = PyUnicode_1BYTE_DATA(out);
    for (Py_ssize_t i = start; i < end; i++)
        *dest++ = latin1_lower[data[i]];
    return out;
}

/* text[start:end] (lowered, with `lower`: text is then one-byte), with `prefix` before it
 * when prefix is not empty. */
static PyObject *
word_string(PyObject *text, int ascii, const void *data, Py_ssize_t start, Py_ssize_t end, PyObject *prefix, int lower)
{
    Py_ssize_t plen = PyUnicode_GET_LENGTH(prefix);
    if (ascii && (plen == 0 || PyUnicode_IS_ASCII(prefix))) {
        PyObject *out = PyUnicode_New(plen + end - start, 127);
        if (out == NULL)
            return NULL;
        Py_UCS1 *dest = PyUnicode_1BYTE_DATA(out);
        if (plen)
            memcpy(dest, PyUnicode_DATA(prefix), (size_t)plen);
        if (lower)
            for (Py_ssize_t i = start; i < end; i++)
                dest[plen + i - start] = latin1_lower[((const Py_UCS1 *)data)[i]];
        else
            memcpy(dest + plen, (const char *)data + start, (size_t)(end - start));
        return out;
    }
    PyObject *word = lower ? lowered_latin1(data, start, end) : PyUnicode_Substring(text, start, end);
    if (word == NULL || plen == 0)
        return word;
    PyObject *out = PyUnicode_Concat(prefix, word);
    Py_DECREF(word);
    return out;
}

/* "skip:" + first character + length rounded down to tens, as the pure path's f-string. */
static PyObject *
skip_token(Py_UCS4 first, Py_ssize_t length)
{
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%zd", length / 10 * 10);
    if (n < 0 || n >= (int)sizeof digits) {
        PyErr_SetString(PyExc_SystemError, "skip token length");
        return NULL;
    }
    PyObject *out = PyUnicode_New(5 + 1 + n, first > 127 ? first : 127);
    if (out == NULL)
        return NULL;
    int kind = PyUnicode_KIND(out);
    void *data = PyUnicode_DATA(out);
    const char *head = "skip:";
    for (Py_ssize_t i = 0; i < 5; i++)
        PyUnicode_WRITE(kind, data, i, (Py_UCS4)(unsigned char)head[i]);
    PyUnicode_WRITE(kind, data, 5, first);
    for (int i = 0; i < n; i++)
        PyUnicode_WRITE(kind, data, 6 + i, (Py_UCS4)(unsigned char)digits[i]);
    return out;
}

/* `prefix` + `item` (a new reference, NULL on error), `item`'s reference dropped. */
static PyObject *
after_prefix(PyObject *prefix, PyObject *item)
{
    if (item == NULL || PyUnicode_GET_LENGTH(prefix) == 0)
        return item;
    PyObject *out = PyUnicode_Concat(prefix, item);
    Py_DECREF(item);
    return out;
}

/* Append `item` to `list` and drop the reference; -1 on error. */
static int
append_new(PyObject *list, PyObject *item)
{
    if (item == NULL)
        return -1;
    int failed = PyList_Append(list, item);
    Py_DECREF(item);
    return failed;
}

PyDoc_STRVAR(words_doc,
"words(text, min_len, max_len, stop, prefix='', lower=False) -> list[str]\n\n"
"The words of `text` (runs of letters joined by inner ' . -) of min_len..max_len characters\n"
"and not in the set `stop` (or None); then skip:<first><length in tens> for each word longer\n"
"than max_len; each after `prefix`.  With `lower` (one-byte text only), those of text.lower().");

static PyObject *
words(PyObject *module, PyObject *args)
{
    PyObject *text, *stop, *prefix = NULL;
    Py_ssize_t lo, hi;
    int lower = 0;
    if (!PyArg_ParseTuple(args, "UnnO|Up:words", &text, &lo, &hi, &stop, &prefix, &lower))
        return NULL;
#if PY_VERSION_HEX < 0x030C0000
    /* Before 3.12 a str made by the legacy API may not be in its compact form yet. */
    if (PyUnicode_READY(text) < 0 || (prefix != NULL && PyUnicode_READY(prefix) < 0))
        return NULL;
#endif
    if (stop == Py_None)
        stop = NULL;
    else if (!PyAnySet_Check(stop)) {
        PyErr_SetString(PyExc_TypeError, "stop must be a set, a frozenset or None");
        return NULL;
    }
    if (lo < 1 || hi < lo) {
        PyErr_SetString(PyExc_ValueError, "need 1 <= min_len <= max_len");
        return NULL;
    }
    if (lower && PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND) {
        PyErr_SetString(PyExc_ValueError, "lower needs a one-byte text");
        return NULL;
    }
    PyObject *empty = PyUnicode_New(0, 0);
    if (empty == NULL)
        return NULL;
    if (prefix == NULL)
        prefix = empty;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    int ascii = PyUnicode_IS_ASCII(text);
    PyObject *out = PyList_New(0), *skips = NULL;
    if (out == NULL)
        goto fail;

    Py_ssize_t i = 0, start = 0;
    for (;;) {
        i = kind == PyUnicode_1BYTE_KIND   ? next_word_1(data, n, i, &start)
            : kind == PyUnicode_2BYTE_KIND ? next_word_2(data, n, i, &start)
                                           : next_word_4(data, n, i, &start);
        if (i < 0)
            break;
        Py_ssize_t length = i - start;
        if (length > hi) {
            if (skips == NULL && (skips = PyList_New(0)) == NULL)
                goto fail;
            Py_UCS4 first = PyUnicode_READ(kind, data, start);
            if (append_new(skips, after_prefix(prefix, skip_token(lower ? latin1_lower[first] : first, length))) < 0)
                goto fail;
            continue;
        }
        if (length < lo)
            continue;
        PyObject *word;
        if (stop == NULL)
            word = word_string(text, ascii, data, start, i, prefix, lower);
        else {
            /* Stopwords are bare words, as the pure path tests them before any prefix. */
            PyObject *bare = word_string(text, ascii, data, start, i, empty, lower);
            if (bare == NULL)
                goto fail;
            int found = PySet_Contains(stop, bare);
            if (found != 0) {
                Py_DECREF(bare);
                if (found < 0)
                    goto fail;
                continue;
            }
            word = after_prefix(prefix, bare);
        }
        if (word == NULL)
            goto fail;
        if (append_new(out, word) < 0)
            goto fail;
    }
    if (skips != NULL) {
        Py_ssize_t m = PyList_GET_SIZE(out);
        if (PyList_SetSlice(out, m, m, skips) < 0)
            goto fail;
        Py_DECREF(skips);
    }
    Py_XDECREF(empty);
    return out;

fail:
    Py_XDECREF(out);
    Py_XDECREF(skips);
    Py_XDECREF(empty);
    return NULL;
}

PyDoc_STRVAR(tags_doc,
"tags(text) -> str\n\n"
"`text` with each tag made one space: what re.sub(\"<[^<>]*>\", \" \", text) gives.");

/* The characters of text[pos:end] after the `len` already at `buf`, which holds text's kind. */
static Py_ssize_t
copy_span(char *buf, Py_ssize_t len, const char *data, int kind, Py_ssize_t pos, Py_ssize_t end)
{
    memcpy(buf + len * kind, data + pos * kind, (size_t)(end - pos) * kind);
    return len + end - pos;
}

/* A tag is the last `<` before a `>` with no `<` between (the pattern's leftmost matches,
 * since [^<>] cannot cross a `<`), and the scan goes on after its `>`.  One loop per kind. */
#define CUT_TAGS(TYPE)                                                                     \
    for (Py_ssize_t i = 0; i < n; i++) {                                                   \
        TYPE ch = ((const TYPE *)data)[i];                                                 \
        if (ch == '<')                                                                     \
            open = i;                                                                      \
        else if (ch == '>' && open >= 0) {                                                 \
            if (buf == NULL && (buf = PyMem_Malloc((size_t)n * kind)) == NULL)             \
                return PyErr_NoMemory();                                                   \
            len = copy_span(buf, len, data, kind, pos, open);                              \
            PyUnicode_WRITE(kind, buf, len, ' ');                                          \
            len++;                                                                         \
            pos = i + 1;                                                                   \
            open = -1;                                                                     \
        }                                                                                  \
    }

static PyObject *
tags(PyObject *module, PyObject *text)
{
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "tags() takes a str");
        return NULL;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0)
        return NULL;
#endif
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), len = 0, pos = 0, open = -1;
    int kind = PyUnicode_KIND(text);
    const char *data = PyUnicode_DATA(text);
    char *buf = NULL; /* the text so far, of the same kind: a tag of 2 or more characters becomes 1 */
    if (kind == PyUnicode_1BYTE_KIND)
        CUT_TAGS(Py_UCS1)
    else if (kind == PyUnicode_2BYTE_KIND)
        CUT_TAGS(Py_UCS2)
    else
        CUT_TAGS(Py_UCS4)
    if (buf == NULL) {
        Py_INCREF(text);
        return text;
    }
    len = copy_span(buf, len, data, kind, pos, n);
    /* Made anew from the characters: the smallest kind that holds them, as every str is. */
    PyObject *out = PyUnicode_FromKindAndData(kind, buf, len);
    PyMem_Free(buf);
    return out;
}

static PyMethodDef methods[] = {
    {"words", words, METH_VARARGS, words_doc},
    {"tags", tags, METH_O, tags_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ctokens", "The tokeniser's word scanner and tag cutter in C (see spamnb.text.tokens).", -1, methods,
};

PyMODINIT_FUNC
PyInit__ctokens(void)
{
    for (int c = 0; c < 128; c++)
        ascii_alnum[c] = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    for (int c = 0; c < 256; c++) {
        latin1_alnum[c] = (unsigned char)is_letter((Py_UCS4)c);
        latin1_lower[c] = (Py_UCS1)Py_UNICODE_TOLOWER((Py_UCS4)c);
    }
    return PyModule_Create(&module);
}
