/* The tokeniser's hot loops in C: a text's words, as spamnb.tokens.Tokenizer.words finds them,
 * an HTML text's tags cut out, as tokens.TAG.sub(" ", text) cuts them, a Received field's
 * dotted words, as tokens.dotted_words picks them, the networks and domains of a Received
 * field's dotted run, as tokens.received_parts makes them, the hosts of a text's links, as
 * tokens.url_hosts finds them, a text's highest code point, a text lowered, the openers of a page's scripts,
 * styles and comments, as tokens.invisible_opener finds them, a page's character references
 * replaced, as html.unescape replaces them, a header block's fields, as
 * spamnb.mail.message.header_fields cuts them, a chunk's token lists counted, as
 * spamnb.bayes.vocabulary.local_rows counts them, tokens' columns looked up (in a vocabulary's index,
 * or in a hash table of a model's token blob as the chunk is counted), named fields taken
 * out of a header block's bytes, as spamnb.mail.headers.field_lines(names).sub removes them,
 * the lines an mbox reader looks at, as spamnb.mail.sources.MARKED_LINE finds them, a
 * vocabulary's index of its tokens, and it grown by a chunk's tokens, as
 * spamnb.bayes.vocabulary.Vocabulary.grow grows it,
 * where a header block ends and whether it may hold a verdict field, as
 * spamnb.mail.headers.blank_line_end and verdict_hinted tell, and a message's line ends'
 * bytes, as spamnb.mail.message.line_end_bytes counts them.
 *
 * Python decides what is tokenised (which texts, lowercasing, CJK bigrams, prefixes); this
 * module only scans one str for the words of tokens.word_pattern and filters them, or for
 * tags, links, openers, character references or header fields, or numbers a chunk's tokens.  It must give exactly the pure path's tokens (and
 * counts): tests/test_ctokens.py, tests/test_nb.py and `make fuzz` compare them.
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
#include <stdint.h>

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

/* word_string of a text or prefix that is not ASCII. */
static PyObject *
other_word_string(PyObject *text, const void *data, Py_ssize_t start, Py_ssize_t end, PyObject *prefix, int lower)
{
    PyObject *word = lower ? lowered_latin1(data, start, end) : PyUnicode_Substring(text, start, end);
    if (word == NULL || PyUnicode_GET_LENGTH(prefix) == 0)
        return word;
    PyObject *out = PyUnicode_Concat(prefix, word);
    Py_DECREF(word);
    return out;
}

/* text[start:end] (lowered, with `lower`: text is then one-byte), with `prefix` before it
 * when prefix is not empty.  Inlined in the scanner's loop: as a call, it saved and restored
 * its registers for every word. */
static inline Py_ALWAYS_INLINE PyObject *
word_string(PyObject *text, int ascii, const void *data, Py_ssize_t start, Py_ssize_t end, PyObject *prefix, int lower)
{
    Py_ssize_t plen = PyUnicode_GET_LENGTH(prefix);
    if (!ascii || (plen != 0 && !PyUnicode_IS_ASCII(prefix)))
        return other_word_string(text, data, start, end, prefix, lower);
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

/* New references held until a list is made of them at once (`held_list`): a PyList_Append
 * per word grew the list again and again, and checked it each time. */
typedef struct {
    PyObject **items;
    Py_ssize_t size, capacity;
    PyObject *first[128]; /* most texts (a header field) have fewer words: no allocation */
} held;

static void
held_init(held *h)
{
    h->items = h->first;
    h->size = 0;
    h->capacity = (Py_ssize_t)(sizeof h->first / sizeof h->first[0]);
}

/* Hold `item` (a new reference; NULL is an error, as is a failed allocation: -1, the item dropped). */
static int
held_add(held *h, PyObject *item)
{
    if (item == NULL)
        return -1;
    if (h->size == h->capacity) {
        Py_ssize_t capacity = h->capacity * 2;
        PyObject **items = h->items == h->first ? PyMem_New(PyObject *, capacity) : PyMem_Resize(h->items, PyObject *, capacity);
        if (items == NULL) {
            Py_DECREF(item);
            PyErr_NoMemory();
            return -1;
        }
        if (h->items == h->first)
            memcpy(items, h->first, sizeof h->first);
        h->items = items;
        h->capacity = capacity;
    }
    h->items[h->size++] = item;
    return 0;
}

static void
held_free(held *h)
{
    if (h->items != h->first)
        PyMem_Free(h->items);
    h->items = h->first;
    h->size = 0;
}

/* The held items as a new list, which takes their references (NULL on error: they are dropped). */
static PyObject *
held_list(held *h)
{
    PyObject *out = PyList_New(h->size);
    if (out == NULL) {
        for (Py_ssize_t i = 0; i < h->size; i++)
            Py_DECREF(h->items[i]);
    }
    else
        for (Py_ssize_t i = 0; i < h->size; i++)
            PyList_SET_ITEM(out, i, h->items[i]);
    held_free(h);
    return out;
}

/* A header field's words recur from field to field and message to message (a Received field's
 * `from`, `by`, `with`, `esmtp`, its relays' names, a Content-Type's `text` and `charset`): the
 * token last made for each slot of a small table is kept, and a token met again is that str, not a
 * new one allocated, filled and later freed (its hash, once taken, kept with it).  Small, so that
 * the strs it keeps stay in a core's cache: a table of every word of the bodies made the scanner
 * slower (docs/measurements.md, issue 30).  Bodies' words and long words (ids) do not go in it. */
#define RECENT_SLOTS 1024 /* a power of two */
#define RECENT_MAX_WORD 24
static PyObject *recent[RECENT_SLOTS];
static uint64_t recent_hash[RECENT_SLOTS];

/* A hash of the ASCII characters s[0:len] after `h` (for a slot of the table), lowered with `lower`:
 * an ASCII word's characters are letters, digits and ' . -, whose lowercase sets bit 0x20.  Eight
 * characters at a time, the last few one by one: nothing read past them. */
static inline uint64_t
ascii_hash(uint64_t h, const Py_UCS1 *s, Py_ssize_t len, int lower)
{
    uint64_t set = lower ? 0x2020202020202020u : 0, v = 0;
    Py_ssize_t j = 0;
    for (; j + 8 <= len; j += 8) {
        memcpy(&v, s + j, 8);
        h = (h ^ (v | set)) * 0x9e3779b97f4a7c15u;
    }
    for (v = (uint64_t)len; j < len; j++)
        v = (v << 8) | (s[j] | (Py_UCS1)set);
    h = (h ^ v) * 0x9e3779b97f4a7c15u;
    return h ^ (h >> 32);
}

/* Whether kept[0:len] is s[0:len] (ASCII), lowered with `lower`. */
static inline int
same_ascii(const Py_UCS1 *kept, const Py_UCS1 *s, Py_ssize_t len, int lower)
{
    uint64_t set = lower ? 0x2020202020202020u : 0, a, b;
    Py_ssize_t j = 0;
    for (; j + 8 <= len; j += 8) {
        memcpy(&a, kept + j, 8);
        memcpy(&b, s + j, 8);
        if (a != (b | set))
            return 0;
    }
    for (; j < len; j++)
        if (kept[j] != (s[j] | (Py_UCS1)set))
            return 0;
    return 1;
}

/* The kept token for `prefix` (`plen` ASCII characters, their ascii_hash `h0`) + the ASCII text's
 * word s[start:end] (lowered with `lower`), made and kept if not there: a new reference, NULL on error. */
static PyObject *
recent_token(PyObject *text, const Py_UCS1 *s, Py_ssize_t start, Py_ssize_t end, PyObject *prefix, Py_ssize_t plen, uint64_t h0, int lower)
{
    uint64_t h = ascii_hash(h0, s + start, end - start, lower);
    size_t slot = (size_t)h & (RECENT_SLOTS - 1);
    PyObject *kept = recent[slot];
    if (kept != NULL && recent_hash[slot] == h && PyUnicode_GET_LENGTH(kept) == plen + end - start
        && same_ascii(PyUnicode_1BYTE_DATA(kept), PyUnicode_1BYTE_DATA(prefix), plen, 0)
        && same_ascii(PyUnicode_1BYTE_DATA(kept) + plen, s + start, end - start, lower))
        return Py_NewRef(kept);
    PyObject *word = word_string(text, 1, s, start, end, prefix, lower);
    if (word != NULL) {
        Py_XSETREF(recent[slot], Py_NewRef(word));
        recent_hash[slot] = h;
    }
    return word;
}

PyDoc_STRVAR(words_doc,
"words(text, min_len, max_len, stop, prefix='', lower=False) -> list[str]\n\n"
"The words of `text` (runs of letters joined by inner ' . -) of min_len..max_len characters\n"
"and not in the set `stop` (or None); then skip:<first><length in tens> for each word longer\n"
"than max_len; each after `prefix`.  With `lower` (one-byte text only), those of text.lower().");

static PyObject *
words(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    /* The arguments read one by one (METH_FASTCALL), not by PyArg_ParseTuple: its format's
     * parsing is a fixed cost on every call, and most calls scan a short header field. */
    if (nargs < 4 || nargs > 6) {
        PyErr_SetString(PyExc_TypeError, "words() takes from 4 to 6 arguments");
        return NULL;
    }
    PyObject *text = args[0], *stop = args[3], *prefix = nargs > 4 ? args[4] : NULL;
    if (!PyUnicode_Check(text) || (prefix != NULL && !PyUnicode_Check(prefix))) {
        PyErr_SetString(PyExc_TypeError, "words() takes a str text and prefix");
        return NULL;
    }
    Py_ssize_t lo = PyNumber_AsSsize_t(args[1], PyExc_OverflowError);
    if (lo == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t hi = PyNumber_AsSsize_t(args[2], PyExc_OverflowError);
    if (hi == -1 && PyErr_Occurred())
        return NULL;
    int lower = nargs > 5 ? PyObject_IsTrue(args[5]) : 0;
    if (lower < 0)
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
    PyObject *out = NULL, *skips = NULL;
    held kept;
    held_init(&kept);
    /* A header field's words (an ASCII text after an ASCII prefix) go through the recent tokens. */
    Py_ssize_t plen = PyUnicode_GET_LENGTH(prefix);
    int recalled = ascii && plen > 0 && stop == NULL && PyUnicode_IS_ASCII(prefix);
    uint64_t h0 = recalled ? ascii_hash(0, PyUnicode_1BYTE_DATA(prefix), plen, 0) : 0;

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
        if (recalled && length <= RECENT_MAX_WORD)
            word = recent_token(text, data, start, i, prefix, plen, h0, lower);
        else if (stop == NULL)
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
        if (held_add(&kept, word) < 0)
            goto fail;
    }
    if ((out = held_list(&kept)) == NULL)
        goto fail;
    if (skips != NULL) {
        Py_ssize_t m = PyList_GET_SIZE(out);
        if (PyList_SetSlice(out, m, m, skips) < 0)
            goto fail;
        Py_DECREF(skips);
    }
    Py_XDECREF(empty);
    return out;

fail:
    for (Py_ssize_t k = 0; k < kept.size; k++)
        Py_DECREF(kept.items[k]);
    held_free(&kept);
    Py_XDECREF(out);
    Py_XDECREF(skips);
    Py_XDECREF(empty);
    return NULL;
}

/* Whether `text` is a str ready to read (else an exception is set: a TypeError with `wrong`). */
static int
readable_str(PyObject *text, const char *wrong)
{
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, wrong);
        return 0;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0)
        return 0;
#endif
    return 1;
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
    if (!readable_str(text, "tags() takes a str"))
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), len = 0, pos = 0, open = -1;
    int kind = PyUnicode_KIND(text);
    const char *data = PyUnicode_DATA(text);
    char *buf = NULL; /* the text so far, of the same kind: a tag of 2 or more characters becomes 1 */
    if (kind == PyUnicode_1BYTE_KIND) {
        /* One-byte text (most pages) goes from `>` to `>` by memchr, and the last `<` before
         * each is found by memchr too: the loop above compares every character twice. */
        const char *at = data, *end = data + n, *gt;
        while ((gt = memchr(at, '>', (size_t)(end - at))) != NULL) {
            for (const char *lt = memchr(at, '<', (size_t)(gt - at)); lt != NULL; lt = memchr(lt + 1, '<', (size_t)(gt - lt - 1)))
                open = lt - data;
            Py_ssize_t i = gt - data;
            if (open >= 0) {
                if (buf == NULL && (buf = PyMem_Malloc((size_t)n)) == NULL)
                    return PyErr_NoMemory();
                len = copy_span(buf, len, data, kind, pos, open);
                buf[len++] = ' ';
                pos = i + 1;
                open = -1;
            }
            at = gt + 1;
        }
    }
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

PyDoc_STRVAR(dotted_doc,
"dotted(field, tokens) -> list[str] | None\n\n"
"The tokens (a list of str) that hold a dot, where `field` (a str) holds no `_` nor `--` and\n"
"the dots of those tokens are as many as the field's; else None (tokens.dotted_words).");

/* How many `ch` text[0:n] (one-byte) holds; with `pair`, -1 where two stand in a row.  A field
 * holds few of each: memchr skips the rest. */
static Py_ssize_t
byte_count(const char *text, Py_ssize_t n, char ch, int pair)
{
    const char *at = text, *end = text + n;
    Py_ssize_t found = 0;
    while ((at = memchr(at, ch, (size_t)(end - at))) != NULL) {
        found++;
        if (++at < end && pair && *at == ch)
            return -1;
    }
    return found;
}

/* How many dots a str holds. */
static Py_ssize_t
str_dots(PyObject *text)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), dots = 0;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (kind == PyUnicode_1BYTE_KIND)
        return byte_count(data, n, '.', 0);
    for (Py_ssize_t i = 0; i < n; i++)
        dots += PyUnicode_READ(kind, data, i) == '.';
    return dots;
}

/* Whether a str holds a `_` or a `--`. */
static int
has_underscore_or_dashes(PyObject *text)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (kind == PyUnicode_1BYTE_KIND)
        return memchr(data, '_', (size_t)n) != NULL || byte_count(data, n, '-', 1) < 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 ch = PyUnicode_READ(kind, data, i);
        if (ch == '_' || (ch == '-' && i + 1 < n && PyUnicode_READ(kind, data, i + 1) == '-'))
            return 1;
    }
    return 0;
}

static PyObject *
dotted(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyUnicode_Check(args[0]) || !PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "dotted() takes a str and a list of str");
        return NULL;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(args[0]) < 0)
        return NULL;
#endif
    if (has_underscore_or_dashes(args[0]))
        Py_RETURN_NONE;
    Py_ssize_t dots = str_dots(args[0]);
    PyObject *tokens = args[1], *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(tokens); i++) {
        PyObject *token = PyList_GET_ITEM(tokens, i);
        if (!PyUnicode_Check(token)) {
            Py_DECREF(out);
            PyErr_SetString(PyExc_TypeError, "dotted() takes a str and a list of str");
            return NULL;
        }
#if PY_VERSION_HEX < 0x030C0000
        if (PyUnicode_READY(token) < 0) {
            Py_DECREF(out);
            return NULL;
        }
#endif
        Py_ssize_t found = str_dots(token);
        if (found && PyList_Append(out, token) < 0) {
            Py_DECREF(out);
            return NULL;
        }
        dots -= found;
    }
    if (dots != 0) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    return out;
}

PyDoc_STRVAR(received_parts_doc,
"received_parts(text) -> (networks, domains)\n\n"
"The network tokens of the IPv4 addresses in `text` (an ASCII str) and the domain tokens of its\n"
"hosts, two tuples of str, as tokens.received_parts makes them (a ValueError for other text).");

static inline int is_ascii_word(Py_UCS1 c) { return ascii_alnum[c] || c == '_'; }
static inline int is_ascii_digit(Py_UCS1 c) { return c >= '0' && c <= '9'; }
static inline int is_ascii_alpha(Py_UCS1 c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
/* A character of a dotted run's labels: DOTTED_ASCII's [a-zA-Z0-9-]. */
static inline int is_label_char(Py_UCS1 c) { return ascii_alnum[c] || c == '-'; }

/* `head` + s[from:to] (ASCII; lowered with `lower`) appended to `list`; -1 on error. */
static int
append_piece(PyObject *list, const char *head, const Py_UCS1 *s, Py_ssize_t from, Py_ssize_t to, int lower)
{
    Py_ssize_t hlen = (Py_ssize_t)strlen(head);
    PyObject *token = PyUnicode_New(hlen + to - from, 127);
    if (token == NULL)
        return -1;
    Py_UCS1 *dest = PyUnicode_1BYTE_DATA(token);
    memcpy(dest, head, (size_t)hlen);
    dest += hlen;
    for (Py_ssize_t i = from; i < to; i++)
        *dest++ = lower ? latin1_lower[s[i]] : s[i];
    return append_new(list, token);
}

/* tokens.domain_suffixes of the host s[b:end] (ASCII): `head` + its last 4, 3 and 2 labels, as many
 * as it has, lowered, appended to `list`; -1 on error. */
static int
append_suffixes(PyObject *list, const char *head, const Py_UCS1 *s, Py_ssize_t b, Py_ssize_t end)
{
    /* The starts of the last 2, 3 and 4 labels: after the last dots, or the host's start. */
    Py_ssize_t starts[5];
    int dots = 0;
    for (Py_ssize_t i = end - 1; i >= b && dots < 4; i--)
        if (s[i] == '.')
            starts[++dots] = i + 1;
    int most = dots < 4 ? dots + 1 : 4;
    if (dots < 4)
        starts[most] = b;
    for (int labels = most; labels >= 2; labels--)
        if (append_piece(list, head, s, starts[labels], end, 1) < 0)
            return -1;
    return 0;
}

/* The end of a run of 1 to 3 ASCII digits at s[q], or -1 (none, or 4 or more). */
static Py_ssize_t
digits_end(const Py_UCS1 *s, Py_ssize_t n, Py_ssize_t q)
{
    Py_ssize_t r = q;
    while (r < n && r - q < 4 && is_ascii_digit(s[r]))
        r++;
    return r == q || r - q > 3 ? -1 : r;
}

/* The end of an address from s[p] on, four runs of 1 to 3 digits joined by dots (the first
 * three runs' ends in `ends`), or -1.  A run's digits are followed by a dot (the last run's, for
 * the callers, by no word character or the end), so only a whole run can be a group: the
 * patterns' `\d{1,3}` have nothing to backtrack into. */
static Py_ssize_t
dotted_quad(const Py_UCS1 *s, Py_ssize_t n, Py_ssize_t p, Py_ssize_t ends[3])
{
    Py_ssize_t q = p;
    for (int k = 0; k < 3; k++) {
        Py_ssize_t r = digits_end(s, n, q);
        if (r < 0 || r >= n || s[r] != '.')
            return -1;
        ends[k] = r;
        q = r + 1;
    }
    return digits_end(s, n, q);
}

/* IPV4_ASCII's findall, `\b(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.\d{1,3}\b`: each address's /24 and
 * /16 networks. */
static int
ip_networks(PyObject *list, const Py_UCS1 *s, Py_ssize_t n)
{
    Py_ssize_t p = 0;
    while (p < n) {
        if (!is_ascii_digit(s[p]) || (p > 0 && is_ascii_word(s[p - 1]))) {
            p++;
            continue;
        }
        Py_ssize_t ends[3], end = dotted_quad(s, n, p, ends);
        if (end < 0 || (end < n && is_ascii_word(s[end]))) {
            p++;
            continue;
        }
        /* rcvd-ip:a.b.c, rcvd-ip:a.b: the match's text up to the third group's end, the second's. */
        if (append_piece(list, "rcvd-ip:", s, p, ends[2], 0) < 0 || append_piece(list, "rcvd-ip:", s, p, ends[1], 0) < 0)
            return -1;
        p = end;
    }
    return 0;
}

/* The domain tokens of the hosts of DOTTED_ASCII's runs (tokens.host_names, run_host and
 * domain_suffixes): each run `(?<![\w-])[a-zA-Z0-9-]++(?:\.[a-zA-Z0-9-]++)++`, less its leading
 * `-` and `.`, cut after its last label but the first that starts with two or more letters
 * followed by a `-` or the label's end (the run's last label only where the run ends a word or
 * the letters do not end the label); then rcvd-host: + the host's last 4, 3 and 2 labels, as
 * many as it has, lowered. */
static int
host_domains(PyObject *list, const Py_UCS1 *s, Py_ssize_t n)
{
    Py_ssize_t p = 0;
    while (p < n) {
        if (!is_label_char(s[p]) || (p > 0 && (is_ascii_word(s[p - 1]) || s[p - 1] == '-'))) {
            p++;
            continue;
        }
        Py_ssize_t e = p;
        int groups = 0;
        while (e < n && is_label_char(s[e]))
            e++;
        while (e + 1 < n && s[e] == '.' && is_label_char(s[e + 1])) {
            for (e++; e < n && is_label_char(s[e]);)
                e++;
            groups++;
        }
        if (!groups) {
            p++;
            continue;
        }
        int at_word_end = e >= n || s[e] != '_';
        Py_ssize_t b = p;
        while (b < e && (s[b] == '-' || s[b] == '.'))
            b++;
        /* The labels from the last back to the second: [start, end). */
        Py_ssize_t end = e, host_end = -1;
        for (int last = 1;; last = 0) {
            Py_ssize_t dot = end - 1;
            while (dot >= b && s[dot] != '.')
                dot--;
            if (dot < b)
                break;
            Py_ssize_t start = dot + 1, letters = start;
            while (letters < end && is_ascii_alpha(s[letters]))
                letters++;
            if (letters - start >= 2 && (letters == end || s[letters] == '-') && (at_word_end || !last || letters < end)) {
                host_end = letters;
                break;
            }
            end = dot;
        }
        if (host_end >= 0 && append_suffixes(list, "rcvd-host:", s, b, host_end) < 0)
            return -1;
        p = e;
    }
    return 0;
}

static PyObject *
received_parts(PyObject *module, PyObject *text)
{
    if (!readable_str(text, "received_parts() takes a str"))
        return NULL;
    if (!PyUnicode_IS_ASCII(text)) {
        PyErr_SetString(PyExc_ValueError, "received_parts() takes an ASCII str");
        return NULL;
    }
    const Py_UCS1 *s = PyUnicode_1BYTE_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    PyObject *networks = PyList_New(0), *domains = PyList_New(0), *out = NULL;
    if (networks != NULL && domains != NULL && ip_networks(networks, s, n) == 0 && host_domains(domains, s, n) == 0) {
        PyObject *a = PyList_AsTuple(networks), *b = PyList_AsTuple(domains);
        out = a != NULL && b != NULL ? PyTuple_Pack(2, a, b) : NULL;
        Py_XDECREF(a);
        Py_XDECREF(b);
    }
    Py_XDECREF(networks);
    Py_XDECREF(domains);
    return out;
}

PyDoc_STRVAR(url_host_tokens_doc,
"url_host_tokens(host) -> tuple[str, ...] | None\n\n"
"tokens.url_host_tokens of an ASCII host (a str): url:ip-address and url: + the host for an IPv4\n"
"address, else url: + its parent domains; None for a host that is not ASCII.");

static PyObject *
url_host_tokens(PyObject *module, PyObject *host)
{
    if (!readable_str(host, "url_host_tokens() takes a str"))
        return NULL;
    if (!PyUnicode_IS_ASCII(host))
        Py_RETURN_NONE;
    const Py_UCS1 *s = PyUnicode_1BYTE_DATA(host);
    Py_ssize_t n = PyUnicode_GET_LENGTH(host), b = 0, end = n;
    PyObject *list = PyList_New(0), *out = NULL;
    if (list == NULL)
        return NULL;
    int failed;
    Py_ssize_t ends[3];
    if (dotted_quad(s, n, 0, ends) == n) /* IPV4's fullmatch */
        failed = append_piece(list, "url:ip-address", s, 0, 0, 0) < 0 || append_piece(list, "url:", s, 0, n, 0) < 0;
    else {
        while (b < end && s[b] == '.')
            b++;
        while (end > b && s[end - 1] == '.')
            end--;
        failed = append_suffixes(list, "url:", s, b, end) < 0;
    }
    if (!failed)
        out = PyList_AsTuple(list);
    Py_DECREF(list);
    return out;
}

PyDoc_STRVAR(links_doc,
"links(text) -> list[str]\n\n"
"The host (group 1) of each match of tokens.URL in `text` (a str), in order, as\n"
"URL.finditer(text) finds them (tokens.url_hosts).");

/* Where the next `://` of text[from:] starts, or -1.  A one-byte text is searched by memchr. */
static Py_ssize_t
find_separator(int kind, const void *data, Py_ssize_t n, Py_ssize_t from)
{
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *text = data;
        while (from + 3 <= n) {
            const Py_UCS1 *colon = memchr(text + from, ':', (size_t)(n - 2 - from));
            if (colon == NULL)
                return -1;
            from = colon - text;
            if (text[from + 1] == '/' && text[from + 2] == '/')
                return from;
            from++;
        }
        return -1;
    }
    for (; from + 3 <= n; from++)
        if (PyUnicode_READ(kind, data, from) == ':' && PyUnicode_READ(kind, data, from + 1) == '/' && PyUnicode_READ(kind, data, from + 2) == '/')
            return from;
    return -1;
}

/* Whether text[at:at + strlen(scheme)] is `scheme` (lowercase ASCII) as the case-blind pattern
 * matches it: each letter in either case, and `s` also as the long s (U+017F), the one other
 * character that matches any of the schemes' letters. */
static int
scheme_at(int kind, const void *data, Py_ssize_t at, const char *scheme)
{
    for (; *scheme; scheme++, at++) {
        Py_UCS4 ch = PyUnicode_READ(kind, data, at);
        if (!((ch < 128 && (ch | 0x20) == (Py_UCS4)*scheme) || (*scheme == 's' && ch == 0x17F)))
            return 0;
    }
    return 1;
}

/* A character of a link's host: [^\s/"'<>?#:] (no character's lowercase differs from it there). */
static inline int
is_host_char(Py_UCS4 ch)
{
    return !(Py_UNICODE_ISSPACE(ch) || ch == '/' || ch == '"' || ch == '\'' || ch == '<' || ch == '>' || ch == '?' || ch == '#' || ch == ':');
}

/* Each `://` is tried at the starts its scheme allows (tokens.url_matches, SCHEME_STARTS): 4
 * (http) then 3 (ftp) characters back after a `p`, 5 (https) after an `s` or the long s; none
 * before the end of the previous match.  A match is the scheme, the `://`, a host of one or
 * more characters and an optional port (`:` and decimal digits, `\d`). */
static PyObject *
links(PyObject *module, PyObject *text)
{
    if (!readable_str(text, "links() takes a str"))
        return NULL;
    static const char *const schemes[] = {"http", "ftp", "https"};
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), end = 0;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = find_separator(kind, data, n, 0); i >= 0; i = find_separator(kind, data, n, i + 3)) {
        if (i == 0)
            continue;
        Py_UCS4 before = PyUnicode_READ(kind, data, i - 1);
        int first, last; /* the schemes to try, in order */
        if (before == 'p' || before == 'P')
            first = 0, last = 1;
        else if (before == 's' || before == 'S' || before == 0x17F)
            first = last = 2;
        else
            continue;
        for (int s = first; s <= last; s++) {
            Py_ssize_t start = i - (Py_ssize_t)strlen(schemes[s]);
            if (start < end || !scheme_at(kind, data, start, schemes[s]))
                continue;
            Py_ssize_t host = i + 3, j = host;
            while (j < n && is_host_char(PyUnicode_READ(kind, data, j)))
                j++;
            if (j == host)
                continue;
            PyObject *found = PyUnicode_Substring(text, host, j);
            if (found == NULL || PyList_Append(out, found) < 0) {
                Py_XDECREF(found);
                Py_DECREF(out);
                return NULL;
            }
            Py_DECREF(found);
            if (j + 1 < n && PyUnicode_READ(kind, data, j) == ':' && Py_UNICODE_ISDECIMAL(PyUnicode_READ(kind, data, j + 1))) {
                j += 2;
                while (j < n && Py_UNICODE_ISDECIMAL(PyUnicode_READ(kind, data, j)))
                    j++;
            }
            end = j;
            break;
        }
    }
    return out;
}

PyDoc_STRVAR(highest_doc,
"highest(text) -> int\n\n"
"The highest code point in `text` (a str), 0 in an empty one: max(map(ord, text), default=0).");

#define HIGHEST(TYPE)                                   \
    for (Py_ssize_t i = 0; i < n; i++) {                \
        TYPE ch = ((const TYPE *)data)[i];              \
        top = ch > top ? ch : top;                      \
    }

static PyObject *
highest(PyObject *module, PyObject *text)
{
    if (!readable_str(text, "highest() takes a str"))
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_UCS4 top = 0;
    if (kind == PyUnicode_1BYTE_KIND)
        HIGHEST(Py_UCS1)
    else if (kind == PyUnicode_2BYTE_KIND)
        HIGHEST(Py_UCS2)
    else
        HIGHEST(Py_UCS4)
    return PyLong_FromUnsignedLong(top);
}

PyDoc_STRVAR(lowered_doc,
"lowered(text) -> str\n\n"
"text.lower() (`text` a str): each character's lowercase, one character for every character but\n"
"U+0130 (two) and the capital sigma (which hangs on its neighbours), a text holding either of\n"
"which is lowered by str.lower itself.");

/* Each character's lowercase into `out`; 0 where one is U+0130 or the capital sigma. */
#define LOWERED(TYPE)                                                  \
    for (Py_ssize_t i = 0; i < n; i++) {                               \
        Py_UCS4 ch = ((const TYPE *)data)[i];                          \
        if (ch < 256)                                                  \
            out[i] = latin1_lower[ch];                                 \
        else if (ch == 0x130 || ch == 0x3A3)                           \
            return 0;                                                  \
        else                                                           \
            out[i] = Py_UNICODE_TOLOWER(ch);                           \
    }                                                                  \
    return 1;

static int
lowered_into(Py_UCS4 *out, int kind, const void *data, Py_ssize_t n)
{
    if (kind == PyUnicode_1BYTE_KIND) {
        LOWERED(Py_UCS1)
    }
    if (kind == PyUnicode_2BYTE_KIND) {
        LOWERED(Py_UCS2)
    }
    LOWERED(Py_UCS4)
}

/* str.lower makes a buffer of three characters for each, and finds each one's lowercase by
 * a call that may give several; the lowercase of a character is one character but for the
 * two whose text goes to str.lower here (tests/test_ctokens.py tries every code point). */
static PyObject *
lowered(PyObject *module, PyObject *text)
{
    if (!readable_str(text, "lowered() takes a str"))
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    Py_UCS4 *out = PyMem_New(Py_UCS4, n > 0 ? n : 1);
    if (out == NULL)
        return PyErr_NoMemory();
    PyObject *made = lowered_into(out, PyUnicode_KIND(text), PyUnicode_DATA(text), n)
                         ? PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out, n)
                         : PyObject_CallMethod(text, "lower", NULL);
    PyMem_Free(out);
    return made;
}

PyDoc_STRVAR(opener_doc,
"opener(text, start) -> (int, int) | None\n\n"
"The span of the first match of tokens.INVISIBLE_OPEN in `text` (a str) from `start` on, as\n"
"INVISIBLE_OPEN.search(text, start).span() gives it (tokens.invisible_opener); None where none.");

/* Whether `ch` is the lowercase ASCII letter `letter` in either case, as the pattern's ASCII-only
 * re.I takes it (tests/test_ctokens.py checks every code point). */
static inline int
matches_letter(Py_UCS4 ch, char letter)
{
    return ch < 128 && (ch | 0x20) == (Py_UCS4)letter;
}

/* Whether text[at:] starts with `name` case-blind and a word ends there (`\b`: the name's last
 * letter is a word character, so the next must not be one: str.isalnum() or `_`). */
static int
name_at(int kind, const void *data, Py_ssize_t n, Py_ssize_t at, const char *name)
{
    for (; *name; name++, at++)
        if (at >= n || !matches_letter(PyUnicode_READ(kind, data, at), *name))
            return 0;
    if (at >= n)
        return 1;
    Py_UCS4 next = PyUnicode_READ(kind, data, at);
    return !(Py_UNICODE_ISALNUM(next) || next == '_');
}

/* Where the next `ch` at or after `from` is in a text (by memchr in a one-byte one), -1 where none is. */
static Py_ssize_t
next_char(int kind, const void *data, Py_ssize_t n, Py_ssize_t from, Py_UCS1 ch)
{
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *at = from < n ? memchr((const Py_UCS1 *)data + from, ch, (size_t)(n - from)) : NULL;
        return at == NULL ? -1 : at - (const Py_UCS1 *)data;
    }
    for (; from < n; from++)
        if (PyUnicode_READ(kind, data, from) == ch)
            return from;
    return -1;
}

/* Each `<` from `start` on is tried as the pattern tries it: `<script`, then `<style`, each
 * ending a word, then `<!--`. */
static PyObject *
opener(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "opener() takes 2 arguments");
        return NULL;
    }
    PyObject *text = args[0];
    if (!readable_str(text, "opener() takes a str and an int"))
        return NULL;
    Py_ssize_t i = PyNumber_AsSsize_t(args[1], PyExc_OverflowError);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    for (i = next_char(kind, data, n, i < 0 ? 0 : i, '<'); i >= 0; i = next_char(kind, data, n, i + 1, '<')) {
        Py_ssize_t end = name_at(kind, data, n, i + 1, "script") ? i + 7
                         : name_at(kind, data, n, i + 1, "style")  ? i + 6
                         : i + 3 < n && PyUnicode_READ(kind, data, i + 1) == '!' && PyUnicode_READ(kind, data, i + 2) == '-' && PyUnicode_READ(kind, data, i + 3) == '-' ? i + 4
                                                                   : -1;
        if (end >= 0)
            return Py_BuildValue("(nn)", i, end);
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(unescaped_doc,
"unescaped(text, entities, invalid_charrefs, invalid_codepoints) -> str\n\n"
"html.unescape(text), given its tables: `entities` html.entities.html5 (a dict), and what it\n"
"makes of numeric references, html._invalid_charrefs (a dict) and html._invalid_codepoints (a set).");

/* A character of a reference's name, as html's pattern `[^\t\n\f <&#;]` takes it. */
static inline int
in_reference_name(Py_UCS4 ch)
{
    return !(ch == '\t' || ch == '\n' || ch == '\f' || ch == ' ' || ch == '<' || ch == '&' || ch == '#' || ch == ';');
}

static inline int
digit_value(Py_UCS4 ch, int base)
{
    if (ch >= '0' && ch <= '9')
        return (int)(ch - '0');
    if (base == 16 && ch >= 'a' && ch <= 'f')
        return (int)(ch - 'a' + 10);
    if (base == 16 && ch >= 'A' && ch <= 'F')
        return (int)(ch - 'A' + 10);
    return -1;
}

/* int(text[start:end], base) of a run of digits: a short one read here, a longer one by int()'s
 * own conversion (which refuses a decimal run past sys.get_int_max_str_digits(), as html's does). */
static PyObject *
number_of(PyObject *text, int kind, const void *data, Py_ssize_t start, Py_ssize_t end, int base)
{
    if (end - start <= 7) {
        long value = 0;
        for (Py_ssize_t i = start; i < end; i++)
            value = value * base + digit_value(PyUnicode_READ(kind, data, i), base);
        return PyLong_FromLong(value);
    }
    PyObject *digits = PyUnicode_Substring(text, start, end);
    PyObject *number = digits == NULL ? NULL : PyLong_FromUnicodeObject(digits, base);
    Py_XDECREF(digits);
    return number;
}

/* What html's _replace_charref makes of a numeric reference to `number`. */
static PyObject *
numeric_replacement(PyObject *number, PyObject *invalid_charrefs, PyObject *invalid_codepoints)
{
    PyObject *found = PyDict_GetItemWithError(invalid_charrefs, number);
    if (found != NULL)
        return Py_NewRef(found);
    if (PyErr_Occurred())
        return NULL;
    int overflow;
    long value = PyLong_AsLongAndOverflow(number, &overflow);
    if (value == -1 && PyErr_Occurred())
        return NULL;
    if (overflow || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF))
        return PyUnicode_FromOrdinal(0xFFFD);
    int invalid = PySet_Contains(invalid_codepoints, number);
    if (invalid < 0)
        return NULL;
    return invalid ? PyUnicode_New(0, 0) : PyUnicode_FromOrdinal((int)value);
}

/* What html's _replace_charref makes of a named reference (`name`: what follows the `&`, its
 * `;` included): the entity, else that of its longest head of two characters or more that is
 * one and the rest after it, else the reference as it stands. */
static PyObject *
named_replacement(PyObject *name, PyObject *entities)
{
    PyObject *found = PyDict_GetItemWithError(entities, name);
    if (found != NULL)
        return Py_NewRef(found);
    if (PyErr_Occurred())
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(name);
    for (Py_ssize_t x = n - 1; x > 1; x--) {
        PyObject *head = PyUnicode_Substring(name, 0, x);
        if (head == NULL)
            return NULL;
        found = PyDict_GetItemWithError(entities, head);
        Py_DECREF(head);
        if (found != NULL) {
            PyObject *rest = PyUnicode_Substring(name, x, n);
            PyObject *out = rest == NULL ? NULL : PyUnicode_Concat(found, rest);
            Py_XDECREF(rest);
            return out;
        }
        if (PyErr_Occurred())
            return NULL;
    }
    PyObject *amp = PyUnicode_FromOrdinal('&');
    if (amp == NULL)
        return NULL;
    PyObject *out = PyUnicode_Concat(amp, name);
    Py_DECREF(amp);
    return out;
}

/* Where a reference matched at the `&` at `amp` ends, its replacement made at *made (NULL on
 * error); -1 where none matches there.  html's pattern: `&` then `#[0-9]+;?`, `#[xX][0-9a-fA-F]+;?`
 * or `[^\t\n\f <&#;]{1,32};?`, the first alternative that matches. */
static Py_ssize_t
reference_at(PyObject *text, int kind, const void *data, Py_ssize_t n, Py_ssize_t amp, PyObject *const *tables, PyObject **made)
{
    Py_ssize_t at = amp + 1, end;
    if (at < n && PyUnicode_READ(kind, data, at) == '#') {
        int base = 0;
        at++;
        if (at < n && digit_value(PyUnicode_READ(kind, data, at), 10) >= 0)
            base = 10;
        else if (at + 1 < n && (PyUnicode_READ(kind, data, at) | 0x20) == 'x' && digit_value(PyUnicode_READ(kind, data, at + 1), 16) >= 0) {
            base = 16;
            at++;
        }
        if (base == 0)
            return -1; /* the third alternative takes no `#` */
        for (end = at; end < n && digit_value(PyUnicode_READ(kind, data, end), base) >= 0;)
            end++;
        PyObject *number = number_of(text, kind, data, at, end, base);
        *made = number == NULL ? NULL : numeric_replacement(number, tables[1], tables[2]);
        Py_XDECREF(number);
    }
    else {
        for (end = at; end < n && end - at < 32 && in_reference_name(PyUnicode_READ(kind, data, end));)
            end++;
        if (end == at)
            return -1;
        if (end < n && PyUnicode_READ(kind, data, end) == ';')
            end++;
        PyObject *name = PyUnicode_Substring(text, at, end);
        *made = name == NULL ? NULL : named_replacement(name, tables[0]);
        Py_XDECREF(name);
        return end;
    }
    return end < n && PyUnicode_READ(kind, data, end) == ';' ? end + 1 : end;
}

/* Each `&` found (by memchr in one-byte text) and the pattern tried there, as its sub() tries
 * it, the pieces between the replaced references joined at the end. */
static PyObject *
unescaped(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyUnicode_Check(args[0]) || !PyDict_Check(args[1]) || !PyDict_Check(args[2]) || !PyAnySet_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "unescaped() takes a str, two dicts and a set");
        return NULL;
    }
    PyObject *text = args[0];
    if (!readable_str(text, "unescaped() takes a str"))
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), last = 0, i = 0;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    PyObject *pieces = NULL, *made;
    for (i = next_char(kind, data, n, 0, '&'); i >= 0; i = next_char(kind, data, n, i + 1, '&')) {
        Py_ssize_t end = reference_at(text, kind, data, n, i, args + 1, &made);
        if (end < 0)
            continue;
        if (made == NULL)
            goto fail;
        if (pieces == NULL && (pieces = PyList_New(0)) == NULL)
            goto fail;
        if (i > last && append_new(pieces, PyUnicode_Substring(text, last, i)) < 0) {
            Py_DECREF(made);
            goto fail;
        }
        if (append_new(pieces, made) < 0)
            goto fail;
        last = end;
        i = end - 1;
    }
    if (pieces == NULL)
        return Py_NewRef(text);
    if (last < n && append_new(pieces, PyUnicode_Substring(text, last, n)) < 0)
        goto fail;
    PyObject *empty = PyUnicode_New(0, 0);
    PyObject *out = empty == NULL ? NULL : PyUnicode_Join(empty, pieces);
    Py_XDECREF(empty);
    Py_DECREF(pieces);
    return out;

fail:
    Py_XDECREF(pieces);
    return NULL;
}

PyDoc_STRVAR(fields_doc,
"fields(text) -> (list[tuple[str, str]], str, str)\n\n"
"The header block at the start of `text` (a str) as spamnb.mail.message.header_fields cuts it:\n"
"each field's (name, value), the line end of a blank line after the fields ('' if none), the rest.");

/* A character of a field's name: printable ASCII but the space and the colon. */
static inline int
is_name_char(Py_UCS4 ch)
{
    return ch >= 0x21 && ch <= 0x7E && ch != ':';
}

#define LINE_END(TYPE)                                         \
    {                                                          \
        const TYPE *s = data;                                  \
        while (from < n && s[from] != '\n' && s[from] != '\r') \
            from++;                                            \
        return from;                                           \
    }

/* Where the line at `from` ends: its first CR or LF, else n.  A one-byte text without a CR
 * (`lf_only`) is searched by memchr. */
static Py_ssize_t
line_end_at(int kind, const void *data, Py_ssize_t n, Py_ssize_t from, int lf_only)
{
    if (kind == PyUnicode_1BYTE_KIND) {
        if (lf_only) {
            const Py_UCS1 *lf = memchr((const Py_UCS1 *)data + from, '\n', (size_t)(n - from));
            return lf == NULL ? n : lf - (const Py_UCS1 *)data;
        }
        LINE_END(Py_UCS1)
    }
    if (kind == PyUnicode_2BYTE_KIND)
        LINE_END(Py_UCS2)
    LINE_END(Py_UCS4)
}

/* The length of the line end (CRLF, CR or LF: CRLF first) at `at`, 0 where none starts. */
static Py_ssize_t
newline_at(int kind, const void *data, Py_ssize_t n, Py_ssize_t at)
{
    if (at >= n)
        return 0;
    Py_UCS4 ch = PyUnicode_READ(kind, data, at);
    if (ch == '\n')
        return 1;
    if (ch != '\r')
        return 0;
    return at + 1 < n && PyUnicode_READ(kind, data, at + 1) == '\n' ? 2 : 1;
}

static inline int
is_blank(int kind, const void *data, Py_ssize_t at)
{
    Py_UCS4 ch = PyUnicode_READ(kind, data, at);
    return ch == ' ' || ch == '\t';
}

/* A field is a name, a colon, blanks (left out of its value), the rest of the line and each
 * line after it that starts with a blank (continuation lines), then its line end or the text's
 * end; the value is all but those blanks and that last line end.  The fields run back to back
 * from the start; the first line that is not one ends them, and its line end, if it is only
 * that (a blank line), is the blank line's. */
static PyObject *
fields(PyObject *module, PyObject *text)
{
    if (!readable_str(text, "fields() takes a str"))
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), pos = 0, blank = 0;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    int lf_only = kind == PyUnicode_1BYTE_KIND && memchr(data, '\r', (size_t)n) == NULL;
    PyObject *found = PyList_New(0);
    if (found == NULL)
        return NULL;
    while (pos < n) {
        Py_ssize_t colon = pos;
        while (colon < n && is_name_char(PyUnicode_READ(kind, data, colon)))
            colon++;
        if (colon == pos || colon == n || PyUnicode_READ(kind, data, colon) != ':') {
            blank = newline_at(kind, data, n, pos);
            break;
        }
        Py_ssize_t start = colon + 1;
        while (start < n && is_blank(kind, data, start))
            start++;
        Py_ssize_t end = line_end_at(kind, data, n, start, lf_only), next = n;
        while (end < n) {
            next = end + newline_at(kind, data, n, end);
            if (next >= n || !is_blank(kind, data, next))
                break;
            end = line_end_at(kind, data, n, next + 1, lf_only);
            next = n;
        }
        PyObject *field = PyTuple_New(2), *name = NULL, *value = NULL;
        if (field != NULL) {
            PyTuple_SET_ITEM(field, 0, name = PyUnicode_Substring(text, pos, colon));
            PyTuple_SET_ITEM(field, 1, value = PyUnicode_Substring(text, start, end));
        }
        if (name == NULL || value == NULL || PyList_Append(found, field) < 0) {
            Py_XDECREF(field);
            Py_DECREF(found);
            return NULL;
        }
        Py_DECREF(field);
        pos = next;
    }
    PyObject *out = PyTuple_New(3), *line_end = NULL, *rest = NULL;
    if (out != NULL) {
        PyTuple_SET_ITEM(out, 0, found);
        PyTuple_SET_ITEM(out, 1, line_end = PyUnicode_Substring(text, pos, pos + blank));
        PyTuple_SET_ITEM(out, 2, rest = PyUnicode_Substring(text, pos + blank, n));
    }
    if (line_end == NULL || rest == NULL) {
        if (out == NULL)
            Py_DECREF(found);
        Py_XDECREF(out);
        return NULL;
    }
    return out;
}

PyDoc_STRVAR(indexed_doc,
"indexed(blob) -> (starts, table)\n\n"
"A hash table of the tokens of a newline-joined UTF-8 blob (as bytes.split(b'\\n') cuts it,\n"
"none for an empty blob), for counted() to look tokens up in: where each token starts (int64,\n"
"one more: its end + 1) and the table's slots (uint64: the hash's high half, column + 1),\n"
"as bytes.  A token met twice keeps its last column, as a dict made of the list would.");

static uint64_t
bytes_hash(const unsigned char *p, Py_ssize_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a, then the high half folded in */
    for (Py_ssize_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h ^ (h >> 29);
}

/* The slot holding the token of `n` bytes at `p` (of hash `h`), or the empty one where it
 * would go; NO_SLOT if the table has neither (indexed() leaves half of it empty). */
#define NO_SLOT ((size_t)-1)

static size_t
slot_of(const uint64_t *table, size_t mask, const char *blob, const int64_t *starts, Py_ssize_t n_cols, const char *p, Py_ssize_t n, uint64_t h)
{
    uint64_t tag = h >> 32;
    size_t i = (size_t)h & mask;
    for (size_t probes = 0; probes <= mask; probes++, i = (i + 1) & mask) {
        uint64_t s = table[i];
        if (s == 0)
            return i;
        if ((s >> 32) == tag) {
            int64_t col = (int64_t)(s & 0xffffffffULL) - 1;
            if (col < n_cols && starts[col + 1] - 1 - starts[col] == n && memcmp(blob + starts[col], p, (size_t)n) == 0)
                return i;
        }
    }
    return NO_SLOT;
}

/* A hash table's room for n tokens: a power of two, at least twice n (at least half empty). */
static size_t
table_room(Py_ssize_t n)
{
    size_t room = 8;
    while (room < 2 * (size_t)n)
        room *= 2;
    return room;
}

static PyObject *
indexed(PyObject *module, PyObject *args)
{
    Py_buffer blob;
    if (!PyArg_ParseTuple(args, "y*:indexed", &blob))
        return NULL;
    const char *data = blob.buf;
    Py_ssize_t size = blob.len, n = 0;
    if (size > 0) {
        n = 1;
        for (const char *at = data; (at = memchr(at, '\n', (size_t)(data + size - at))) != NULL; at++)
            n++;
    }
    size_t room = table_room(n);
    PyObject *starts = NULL, *table = NULL, *result = NULL;
    if (n >= (Py_ssize_t)UINT32_MAX - 1) {
        PyErr_SetString(PyExc_OverflowError, "indexed(): more tokens than the table numbers");
        goto done;
    }
    starts = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)sizeof(int64_t) * (n + 1));
    table = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(sizeof(uint64_t) * room));
    if (starts == NULL || table == NULL)
        goto done;
    int64_t *at = (int64_t *)PyBytes_AS_STRING(starts);
    uint64_t *slots = (uint64_t *)PyBytes_AS_STRING(table);
    memset(slots, 0, sizeof(uint64_t) * room);
    Py_ssize_t col = 0;
    at[0] = 0;
    for (Py_ssize_t i = 0; i < size && col < n; i++)
        if (data[i] == '\n')
            at[++col] = i + 1;
    at[n] = size + 1;
    for (col = 0; col < n; col++) {
        const char *p = data + at[col];
        Py_ssize_t len = at[col + 1] - 1 - at[col];
        uint64_t h = bytes_hash((const unsigned char *)p, len);
        slots[slot_of(slots, room - 1, data, at, n, p, len, h)] = ((h >> 32) << 32) | (uint64_t)(col + 1);
    }
    result = PyTuple_Pack(2, starts, table);
done:
    Py_XDECREF(starts);
    Py_XDECREF(table);
    PyBuffer_Release(&blob);
    return result;
}

PyDoc_STRVAR(counted_doc,
"counted(token_lists, numbers[, blob, starts, table]) -> (tokens, cols, counts, lengths, columns, fields)\n\n"
"A chunk's token lists (a list of lists of str) counted: its distinct tokens in order of first\n"
"sight (a list); each message's distinct tokens as their places in that list, with their\n"
"counts, in order of first sight in the message (int32 each); and how many each message has\n"
"(int64).  With a vocabulary's blob and its indexed() starts and table: also each distinct\n"
"token's column there, -1 where it has none (int64), and each message's entries in order of\n"
"those columns, the ones without after the rest in order of first sight (else columns is\n"
"None).  With `numbers` (not None), as field_numbers() takes it: each entry's field, the\n"
"number of its token's head, asked in the order of the tokens (int32; else fields is None).\n"
"The numbers as bytearrays of native ints.");

static PyObject *
not_token_lists(void)
{
    PyErr_SetString(PyExc_TypeError, "counted() takes a list of lists of str");
    return NULL;
}

/* A token's UTF-8 bytes, as the vocabulary's blob holds them (surrogates passed through):
 * an ASCII str's own, else its cached UTF-8, else a bytes object made in `*made`. */
static const char *
utf8_of(PyObject *token, Py_ssize_t *n, PyObject **made)
{
    *made = NULL;
    if (PyUnicode_IS_ASCII(token)) {
        *n = PyUnicode_GET_LENGTH(token);
        return (const char *)PyUnicode_DATA(token);
    }
    const char *p = PyUnicode_AsUTF8AndSize(token, n);
    if (p != NULL)
        return p;
    if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
        return NULL;
    PyErr_Clear();
    if ((*made = PyUnicode_AsEncodedString(token, "utf-8", "surrogatepass")) == NULL)
        return NULL;
    *n = PyBytes_GET_SIZE(*made);
    return PyBytes_AS_STRING(*made);
}

/* A message's entries (`cols`, `counts`, n of them) sorted by their tokens' columns in the
 * vocabulary (`columns` of their places), those without one (-1) after the rest, in their
 * order: the order batch scoring sums a message's known entries in (nb.EventModel.entries),
 * whose sort then finds each message's run in order already.  A radix sort (stable), on
 * scratch room for n keys and entries twice over. */
static void
sorted_by_column(int32_t *cols, int32_t *counts, Py_ssize_t n, const int64_t *columns, Py_ssize_t n_cols, uint64_t *key, uint64_t *key2, int32_t *cols2, int32_t *counts2)
{
    uint64_t top = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t c = columns[cols[i]];
        key[i] = c >= 0 ? (uint64_t)c : (uint64_t)n_cols + (uint64_t)i;
        top |= key[i];
    }
    int bits = 0;
    while (bits < 64 && (top >> bits) != 0)
        bits++;
    /* As few passes as digits of at most 11 bits allow, each digit as narrow as that lets it:
     * a message holds a few hundred entries, so its counters should be few. */
    int passes = (bits + 10) / 11, digit = passes ? (bits + passes - 1) / passes : 0;
    uint64_t low = ((uint64_t)1 << digit) - 1;
    int32_t *c = cols, *k = counts;
    for (int shift = 0; shift < bits; shift += digit) {
        uint32_t at[(1 << 11) + 1];
        memset(at, 0, sizeof(uint32_t) * (size_t)(low + 2));
        for (Py_ssize_t i = 0; i < n; i++)
            at[((key[i] >> shift) & low) + 1]++;
        for (uint64_t b = 0; b <= low; b++)
            at[b + 1] += at[b];
        for (Py_ssize_t i = 0; i < n; i++) {
            uint32_t to = at[(key[i] >> shift) & low]++;
            key2[to] = key[i];
            cols2[to] = c[i];
            counts2[to] = k[i];
        }
        uint64_t *swap_key = key;
        int32_t *swap_cols = c, *swap_counts = k;
        key = key2, c = cols2, k = counts2;
        key2 = swap_key, cols2 = swap_cols, counts2 = swap_counts;
    }
    if (c != cols) {
        memcpy(cols, c, sizeof(int32_t) * (size_t)n);
        memcpy(counts, k, sizeof(int32_t) * (size_t)n);
    }
}

/* A token of the message being counted, as the look-up in the vocabulary's table needs it. */
typedef struct {
    const char *p; /* its UTF-8 */
    Py_ssize_t len;
    PyObject *made; /* the bytes object holding them, where they were encoded here */
    uint64_t h;
    int64_t guess; /* the column in its first slot, if the hash's high half matches, else -1 */
} Probe;

/* A chunk's own tokens (those not in a vocabulary's blob) are found by place in a table of
 * (hash's high half, place + 1) slots, at most half of them used: the hash FNV-1a of the
 * str's own bytes (equal strs are of one kind, with the same bytes), compared by kind, length
 * and bytes.  A dict of them cost three times as much: siphash, its look-up, an int per place. */
static uint64_t
str_hash(PyObject *s)
{
    return bytes_hash(PyUnicode_DATA(s), PyUnicode_GET_LENGTH(s) * PyUnicode_KIND(s));
}

static int
same_str(PyObject *a, PyObject *b)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(a);
    int kind = PyUnicode_KIND(a);
    return a == b || (PyUnicode_GET_LENGTH(b) == n && PyUnicode_KIND(b) == kind && memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)n * (size_t)kind) == 0);
}

/* Whether `head` (a str, or NULL for none yet) is token[:colon + 1], the head of `token` whose
 * first colon PyUnicode_FindChar found at `colon` (-1: none, the head ""): `counted` and
 * `field_numbers` keep a run of tokens of one field to the head they made for its first. */
static int
is_head_of(PyObject *head, PyObject *token, Py_ssize_t colon)
{
    return head != NULL && PyUnicode_GET_LENGTH(head) == colon + 1 && (colon < 0 || PyUnicode_Tailmatch(token, head, 0, colon + 1, -1) == 1);
}

/* A table of places' slots moved into a wider one (`to_mask`, empty): each goes where its
 * high half, the hash's, tells (`place_slot`), so no token is read or hashed again. */
static void
slots_moved(const uint64_t *from, size_t from_room, uint64_t *to, size_t to_mask)
{
    for (size_t i = 0; i < from_room; i++)
        if (from[i] != 0) {
            size_t j = (size_t)(from[i] >> 32) & to_mask;
            while (to[j] != 0)
                j = (j + 1) & to_mask;
            to[j] = from[i];
        }
}

/* The slot of `token` (hash `h`) in a table of places in the list `distinct` (counted's
 * chunk's, or a vocabulary's index), or the empty one where it would go: the first tried is
 * told by the slot's own high half (`slots_moved`).  `checked`
 * (a vocabulary's list, which Python code may change): a place past the list's end, or not a
 * str, matches nothing, and NO_SLOT tells a full table; counted's own list and table need no
 * such checks (a constant, so each call compiles without them or with them). */
static inline size_t
place_slot(const uint64_t *slots, size_t mask, PyObject *distinct, PyObject *token, uint64_t h, int checked)
{
    size_t i = (size_t)(h >> 32) & mask;
    for (size_t probes = 0; !checked || probes <= mask; probes++, i = (i + 1) & mask) {
        uint64_t s = slots[i];
        if (s == 0)
            return i;
        Py_ssize_t place = (Py_ssize_t)(s & 0xffffffffULL) - 1;
        if ((s >> 32) == (h >> 32) && (!checked || place < PyList_GET_SIZE(distinct))) {
            PyObject *other = PyList_GET_ITEM(distinct, place);
            if ((!checked || PyUnicode_CheckExact(other)) && same_str(other, token))
                return i;
        }
    }
    return NO_SLOT;
}

/* One pass: each token looked up once, in the vocabulary's table (its place then kept by
 * column in `place_of`) or else in the chunk's table of places (`place_slot`); one met again in
 * the same message is told by the last message that held it (`last`, numbered from 1) and
 * counted at its entry there (`entry`).  A token's head (its field) is read as it is given
 * its place, while the token is in the cache: a run of places of one head share one, and
 * the heads are numbered after the pass, where Python code (a __missing__) may run. */
static PyObject *
counted(PyObject *module, PyObject *args)
{
    PyObject *lists, *numbers;
    Py_buffer blob = {0}, starts_buf = {0}, table_buf = {0};
    if (!PyArg_ParseTuple(args, "OO|y*y*y*:counted", &lists, &numbers, &blob, &starts_buf, &table_buf))
        return NULL;
    int indexed = blob.buf != NULL, by_field = numbers != Py_None;
    PyObject *distinct = NULL, *result = NULL;
    PyObject *heads = NULL; /* by_field: the places' heads, one per run of places that share one */
    PyObject *f = NULL; /* by_field: the entries' fields */
    int32_t *cols = NULL, *counts = NULL, *last = NULL, *entry = NULL, *place_of = NULL, *head_of = NULL, *fields = NULL;
    int64_t *lengths = NULL, *columns = NULL;
    uint64_t *own = NULL; /* the chunk's table of places */
    size_t own_mask = 4095, own_used = 0;
    Probe *probes = NULL; /* a message's tokens' UTF-8, hashes and first slots, read ahead */
    char *scratch = NULL; /* sorted_by_column's room for as many entries */
    Py_ssize_t probe_room = 0;
    const int64_t *starts = starts_buf.buf;
    const uint64_t *table = table_buf.buf;
    Py_ssize_t n_cols = 0;
    size_t mask = 0;
    if (indexed) {
        n_cols = starts_buf.len / (Py_ssize_t)sizeof(int64_t) - 1;
        size_t room = (size_t)table_buf.len / sizeof(uint64_t);
        mask = room - 1;
        if (table_buf.buf == NULL || n_cols < 0 || room < 8 || (room & mask) != 0 || (size_t)n_cols * 2 > room) {
            PyErr_SetString(PyExc_ValueError, "counted(): not a vocabulary's indexed() starts and table");
            goto done;
        }
        for (Py_ssize_t c = 0; c < n_cols; c++)
            if (starts[c] < 0 || starts[c + 1] <= starts[c] || starts[c + 1] - 1 > blob.len) {
                PyErr_SetString(PyExc_ValueError, "counted(): the starts do not fit the blob");
                goto done;
            }
    }
    if (!PyList_Check(lists)) {
        not_token_lists();
        goto done;
    }
    Py_ssize_t n = PyList_GET_SIZE(lists), total = 0;
    for (Py_ssize_t m = 0; m < n; m++) {
        PyObject *tokens = PyList_GET_ITEM(lists, m);
        if (!PyList_Check(tokens)) {
            not_token_lists();
            goto done;
        }
        total += PyList_GET_SIZE(tokens);
    }
    if (total >= INT32_MAX || n >= INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "counted(): more tokens or messages than an int32 numbers");
        goto done;
    }
    own = PyMem_Calloc(own_mask + 1, sizeof(uint64_t));
    distinct = PyList_New(0);
    if (by_field && (heads = PyList_New(0)) == NULL)
        goto done;
    cols = PyMem_Malloc(sizeof(int32_t) * (size_t)(total + 1));
    counts = PyMem_Malloc(sizeof(int32_t) * (size_t)(total + 1));
    lengths = PyMem_Malloc(sizeof(int64_t) * (size_t)(n + 1));
    place_of = indexed ? PyMem_Malloc(sizeof(int32_t) * (size_t)(n_cols + 1)) : NULL;
    Py_ssize_t room = 0, e = 0; /* last, entry and columns: per place, grown as places are given */
    if (own == NULL || distinct == NULL || cols == NULL || counts == NULL || lengths == NULL || (indexed && place_of == NULL)) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    if (indexed)
        memset(place_of, 0xff, sizeof(int32_t) * (size_t)(n_cols + 1)); /* -1: no place yet */
    for (Py_ssize_t m = 0; m < n; m++) {
        PyObject *tokens = PyList_GET_ITEM(lists, m);
        Py_ssize_t first = e, size = PyList_GET_SIZE(tokens);
        if (indexed) {
            if (size > probe_room) {
                Probe *grown = PyMem_Realloc(probes, sizeof(Probe) * (size_t)size);
                if (grown == NULL) {
                    PyErr_NoMemory();
                    goto done;
                }
                probes = grown;
                for (Py_ssize_t i = probe_room; i < size; i++)
                    probes[i].made = NULL;
                probe_room = size;
                char *room_for = PyMem_Realloc(scratch, (2 * sizeof(uint64_t) + 2 * sizeof(int32_t)) * (size_t)size);
                if (room_for == NULL) {
                    PyErr_NoMemory();
                    goto done;
                }
                scratch = room_for;
            }
            /* The table, the starts and the blob are read at random: each stage asks for the
             * next one's memory for every token of the message before any token needs it. */
            for (Py_ssize_t i = 0; i < size; i++) {
                PyObject *token = PyList_GET_ITEM(tokens, i);
                Probe *q = &probes[i];
                q->made = NULL;
                if (!PyUnicode_CheckExact(token)) {
                    not_token_lists();
                    goto done;
                }
                if ((q->p = utf8_of(token, &q->len, &q->made)) == NULL)
                    goto done;
                q->h = bytes_hash((const unsigned char *)q->p, q->len);
                __builtin_prefetch(&table[q->h & mask]);
            }
            for (Py_ssize_t i = 0; i < size; i++) {
                uint64_t s = table[probes[i].h & mask];
                probes[i].guess = (s >> 32) == (probes[i].h >> 32) && (int64_t)(s & 0xffffffffULL) - 1 < n_cols ? (int64_t)(s & 0xffffffffULL) - 1 : -1;
                if (probes[i].guess >= 0) {
                    __builtin_prefetch(&starts[probes[i].guess]);
                    __builtin_prefetch(&place_of[probes[i].guess]);
                }
            }
            for (Py_ssize_t i = 0; i < size; i++)
                if (probes[i].guess >= 0)
                    __builtin_prefetch((const char *)blob.buf + starts[probes[i].guess]);
        }
        /* No Python code runs in this loop (exact str keys, int values): no list changes. */
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(tokens); i++) {
            PyObject *token = PyList_GET_ITEM(tokens, i);
            if (!PyUnicode_CheckExact(token)) {
                not_token_lists();
                goto done;
            }
            Py_ssize_t place = -1, col = -1;
            uint64_t h = 0;
            size_t own_at = 0; /* the token's slot in the chunk's own table */
            if (indexed) {
                Probe *q = &probes[i];
                size_t at = slot_of(table, mask, blob.buf, starts, n_cols, q->p, q->len, q->h);
                uint64_t s = at == NO_SLOT ? 0 : table[at];
                Py_CLEAR(q->made);
                if (s != 0) {
                    col = (Py_ssize_t)(s & 0xffffffffULL) - 1;
                    place = place_of[col];
                }
            }
            if (place < 0 && col < 0) {
                if (PyUnicode_READY(token) < 0)
                    goto done;
                h = str_hash(token);
                own_at = place_slot(own, own_mask, distinct, token, h, 0);
                if (own[own_at] != 0)
                    place = (Py_ssize_t)(own[own_at] & 0xffffffffULL) - 1;
            }
            if (place < 0) {
                place = PyList_GET_SIZE(distinct);
                if (place >= room) {
                    Py_ssize_t more = room ? 2 * room : 4096;
                    int32_t *grown = PyMem_Realloc(last, sizeof(int32_t) * (size_t)more);
                    if (grown == NULL) {
                        PyErr_NoMemory();
                        goto done;
                    }
                    last = grown;
                    memset(last + room, 0, sizeof(int32_t) * (size_t)(more - room));
                    if ((grown = PyMem_Realloc(entry, sizeof(int32_t) * (size_t)more)) == NULL) {
                        PyErr_NoMemory();
                        goto done;
                    }
                    entry = grown;
                    int64_t *wider = PyMem_Realloc(columns, sizeof(int64_t) * (size_t)more);
                    if (wider == NULL) {
                        PyErr_NoMemory();
                        goto done;
                    }
                    columns = wider;
                    if (by_field) {
                        if ((grown = PyMem_Realloc(head_of, sizeof(int32_t) * (size_t)more)) == NULL) {
                            PyErr_NoMemory();
                            goto done;
                        }
                        head_of = grown;
                    }
                    room = more;
                }
                if (col >= 0)
                    place_of[col] = (int32_t)place;
                else {
                    if (2 * (own_used + 1) > own_mask + 1) { /* the table twice as large, its places placed anew */
                        size_t wider_mask = 2 * own_mask + 1;
                        uint64_t *wider = PyMem_Calloc(wider_mask + 1, sizeof(uint64_t));
                        if (wider == NULL) {
                            PyErr_NoMemory();
                            goto done;
                        }
                        slots_moved(own, own_mask + 1, wider, wider_mask);
                        PyMem_Free(own);
                        own = wider;
                        own_mask = wider_mask;
                        own_at = place_slot(own, own_mask, distinct, token, h, 0);
                    }
                    own[own_at] = ((h >> 32) << 32) | (uint64_t)(place + 1);
                    own_used++;
                }
                columns[place] = (int64_t)col;
                if (PyList_Append(distinct, token) < 0)
                    goto done;
                if (by_field) {
                    Py_ssize_t colon = PyUnicode_FindChar(token, ':', 0, PyUnicode_GET_LENGTH(token), 1), n_heads = PyList_GET_SIZE(heads);
                    if (colon == -2)
                        goto done;
                    PyObject *head = n_heads ? PyList_GET_ITEM(heads, n_heads - 1) : NULL;
                    if (!is_head_of(head, token, colon)) {
                        if ((head = PyUnicode_Substring(token, 0, colon + 1)) == NULL)
                            goto done;
                        int failed = PyList_Append(heads, head);
                        Py_DECREF(head);
                        if (failed < 0)
                            goto done;
                        n_heads++;
                    }
                    head_of[place] = (int32_t)(n_heads - 1);
                }
            }
            if (last[place] != (int32_t)(m + 1)) {
                last[place] = (int32_t)(m + 1);
                entry[place] = (int32_t)e;
                cols[e] = (int32_t)place;
                counts[e++] = 1;
            }
            else
                counts[entry[place]]++;
        }
        lengths[m] = (int64_t)(e - first);
        if (indexed && e - first > 1) {
            uint64_t *key = (uint64_t *)scratch;
            int32_t *more = (int32_t *)(key + 2 * size);
            sorted_by_column(cols + first, counts + first, e - first, columns, n_cols, key, key + size, more, more + size);
        }
    }
    if (by_field) {
        /* The heads numbered in order (the lists are read no more), then each entry's field. */
        Py_ssize_t n_heads = PyList_GET_SIZE(heads);
        if ((fields = PyMem_Malloc(sizeof(int32_t) * (size_t)(n_heads + 1))) == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t h = 0; h < n_heads; h++) {
            PyObject *number = PyObject_GetItem(numbers, PyList_GET_ITEM(heads, h));
            if (number == NULL)
                goto done;
            long long id = PyLong_AsLongLong(number);
            Py_DECREF(number);
            if (id == -1 && PyErr_Occurred())
                goto done;
            if (id < INT32_MIN || id > INT32_MAX) {
                PyErr_SetString(PyExc_OverflowError, "counted(): a field's number past int32");
                goto done;
            }
            fields[h] = (int32_t)id;
        }
        if ((f = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)sizeof(int32_t) * e)) == NULL)
            goto done;
        int32_t *out = (int32_t *)PyByteArray_AS_STRING(f);
        for (Py_ssize_t i = 0; i < e; i++)
            out[i] = fields[head_of[cols[i]]];
    }
    PyObject *c = PyByteArray_FromStringAndSize((const char *)cols, (Py_ssize_t)sizeof(int32_t) * e);
    PyObject *k = PyByteArray_FromStringAndSize((const char *)counts, (Py_ssize_t)sizeof(int32_t) * e);
    PyObject *l = PyByteArray_FromStringAndSize((const char *)lengths, (Py_ssize_t)sizeof(int64_t) * n);
    PyObject *w = indexed ? PyByteArray_FromStringAndSize((const char *)columns, (Py_ssize_t)sizeof(int64_t) * PyList_GET_SIZE(distinct)) : Py_NewRef(Py_None);
    if (c != NULL && k != NULL && l != NULL && w != NULL)
        result = PyTuple_Pack(6, distinct, c, k, l, w, by_field ? f : Py_None);
    Py_XDECREF(c);
    Py_XDECREF(k);
    Py_XDECREF(l);
    Py_XDECREF(w);
done:
    Py_XDECREF(f);
    for (Py_ssize_t i = 0; i < probe_room; i++) /* a message left part way: its encoded tokens */
        Py_XDECREF(probes[i].made);
    PyMem_Free(probes);
    PyMem_Free(scratch);
    PyMem_Free(last);
    PyMem_Free(entry);
    PyMem_Free(columns);
    PyMem_Free(place_of);
    PyMem_Free(head_of);
    PyMem_Free(fields);
    Py_XDECREF(heads);
    PyMem_Free(cols);
    PyMem_Free(counts);
    PyMem_Free(lengths);
    PyMem_Free(own);
    Py_XDECREF(distinct);
    if (blob.buf != NULL)
        PyBuffer_Release(&blob);
    if (starts_buf.buf != NULL)
        PyBuffer_Release(&starts_buf);
    if (table_buf.buf != NULL)
        PyBuffer_Release(&table_buf);
    return result;
}

PyDoc_STRVAR(field_numbers_doc,
"field_numbers(tokens, numbers) -> bytearray\n\n"
"numbers[t[:t.find(':') + 1]] ('' for a token without a colon) for each of a list of str, as\n"
"native int64s: `numbers` (a mapping whose numbers do not change once given) is asked once per\n"
"run of tokens with equal heads.");

/* A chunk's tokens come field by field, so most heads are the one before's: its number again,
 * without a str made or looked up (the pure path's slice and dict look-up per token). */
static PyObject *
field_numbers(PyObject *module, PyObject *args)
{
    PyObject *tokens, *numbers;
    if (!PyArg_ParseTuple(args, "O!O:field_numbers", &PyList_Type, &tokens, &numbers))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(tokens);
    PyObject *out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)sizeof(int64_t) * n);
    if (out == NULL)
        return NULL;
    int64_t *ids = (int64_t *)PyByteArray_AS_STRING(out), id = 0;
    PyObject *last = NULL; /* the head last asked for */
    for (Py_ssize_t i = 0; i < n; i++) {
        /* `numbers` may run Python code (a __missing__): the list is read again each time. */
        if (PyList_GET_SIZE(tokens) != n) {
            PyErr_SetString(PyExc_RuntimeError, "field_numbers(): the list changed");
            goto fail;
        }
        PyObject *token = PyList_GET_ITEM(tokens, i);
        if (!PyUnicode_Check(token)) {
            PyErr_SetString(PyExc_TypeError, "field_numbers() takes a list of str");
            goto fail;
        }
        Py_ssize_t colon = PyUnicode_FindChar(token, ':', 0, PyUnicode_GET_LENGTH(token), 1);
        if (colon == -2)
            goto fail;
        if (!is_head_of(last, token, colon)) {
            Py_XDECREF(last);
            if ((last = PyUnicode_Substring(token, 0, colon + 1)) == NULL)
                goto fail;
            PyObject *number = PyObject_GetItem(numbers, last);
            if (number == NULL)
                goto fail;
            id = (int64_t)PyLong_AsLongLong(number);
            Py_DECREF(number);
            if (id == -1 && PyErr_Occurred())
                goto fail;
        }
        ids[i] = id;
    }
    Py_XDECREF(last);
    return out;

fail:
    Py_XDECREF(last);
    Py_DECREF(out);
    return NULL;
}

PyDoc_STRVAR(token_index_doc,
"token_index(known) -> bytearray\n\n"
"A vocabulary's index: a hash table of each str of the list `known` by its place (its column),\n"
"for grown() and looked_up(): slots (uint64: the hash's high half, column + 1), at most half\n"
"of them used.  A token met twice keeps its last column, as a dict made of the list would.");

/* A vocabulary's index is counted's table of a chunk's places (`place_slot`) kept over the
 * vocabulary's list: a dict's siphash of each fresh str, its look-up and an int per column
 * cost train's parent several times as much. */
static PyObject *
token_index(PyObject *module, PyObject *known)
{
    if (!PyList_Check(known)) {
        PyErr_SetString(PyExc_TypeError, "token_index() takes a list of str");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(known);
    if (n >= (Py_ssize_t)UINT32_MAX - 1) {
        PyErr_SetString(PyExc_OverflowError, "more tokens than a vocabulary's index numbers");
        return NULL;
    }
    size_t room = table_room(n);
    PyObject *table = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(sizeof(uint64_t) * room));
    if (table == NULL)
        return NULL;
    uint64_t *slots = (uint64_t *)PyByteArray_AS_STRING(table);
    memset(slots, 0, sizeof(uint64_t) * room);
    /* No Python code runs in this loop: no list changes. */
    for (Py_ssize_t col = 0; col < n; col++) {
        PyObject *token = PyList_GET_ITEM(known, col);
        if (!PyUnicode_CheckExact(token)) {
            PyErr_SetString(PyExc_TypeError, "token_index() takes a list of str");
            Py_DECREF(table);
            return NULL;
        }
        if (PyUnicode_READY(token) < 0) {
            Py_DECREF(table);
            return NULL;
        }
        uint64_t h = str_hash(token);
        slots[place_slot(slots, room - 1, known, token, h, 1)] = ((h >> 32) << 32) | (uint64_t)(col + 1); /* never full: twice the room */
    }
    return table;
}

/* The index's slots and mask; NULL (an error set) for a bytearray not a token_index(). */
static uint64_t *
index_slots(PyObject *table, size_t *mask)
{
    size_t size = (size_t)PyByteArray_GET_SIZE(table), room = size / sizeof(uint64_t);
    if (room < 8 || (room & (room - 1)) != 0 || size % sizeof(uint64_t) != 0) {
        PyErr_SetString(PyExc_ValueError, "not a vocabulary's token_index()");
        return NULL;
    }
    *mask = room - 1;
    return (uint64_t *)PyByteArray_AS_STRING(table);
}

PyDoc_STRVAR(looked_up_doc,
"looked_up(index, known, tokens) -> list[int]\n\n"
"Each of a list of tokens' column in a vocabulary (its list `known`, and its token_index()),\n"
"-1 where it has none (and for what is not a str), as dict.get(t, -1) of a dict made of the list.");

/* The vocabulary's look-ups: one call, not a Python-level dict.get per token through map. */
static PyObject *
looked_up(PyObject *module, PyObject *args)
{
    PyObject *table, *known, *tokens;
    if (!PyArg_ParseTuple(args, "O!O!O!:looked_up", &PyByteArray_Type, &table, &PyList_Type, &known, &PyList_Type, &tokens))
        return NULL;
    size_t mask;
    const uint64_t *slots = index_slots(table, &mask);
    if (slots == NULL)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(tokens);
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    /* No Python code runs in this loop: no list changes. */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *token = PyList_GET_ITEM(tokens, i), *col;
        Py_ssize_t c = -1;
        if (PyUnicode_CheckExact(token)) {
            if (PyUnicode_READY(token) < 0) {
                Py_DECREF(out);
                return NULL;
            }
            size_t at = place_slot(slots, mask, known, token, str_hash(token), 1);
            c = at == NO_SLOT || slots[at] == 0 ? -1 : (Py_ssize_t)(slots[at] & 0xffffffffULL) - 1;
        }
        if ((col = PyLong_FromSsize_t(c)) == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, col);
    }
    return out;
}

PyDoc_STRVAR(without_fields_doc,
"without_fields(head, names) -> bytes\n\n"
"A header block (bytes) less each field named by one of `names` (a tuple of bytes, at least one,\n"
"ASCII case-blind) with its continuation lines, as spamnb.mail.headers.field_lines(names).sub(b'', head)\n"
"cuts them; `head` itself where none is.");

/* ASCII's case folding, which a bytes pattern's re.I applies (and nothing beyond it). */
static inline unsigned char
ascii_lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

/* Where the colon is if the line at `at` names a field of one of `names` (a name, blanks, a
 * colon), else -1.  The field's first line ends at the colon's line end: a name may hold an LF,
 * as the pattern's may. */
static Py_ssize_t
names_field(const unsigned char *s, Py_ssize_t n, Py_ssize_t at, PyObject *names)
{
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(names); k++) {
        PyObject *name = PyTuple_GET_ITEM(names, k);
        const unsigned char *m = (const unsigned char *)PyBytes_AS_STRING(name);
        Py_ssize_t size = PyBytes_GET_SIZE(name), i = 0;
        if (size > n - at)
            continue;
        while (i < size && ascii_lower(s[at + i]) == ascii_lower(m[i]))
            i++;
        if (i < size)
            continue;
        Py_ssize_t c = at + size;
        while (c < n && (s[c] == ' ' || s[c] == '\t'))
            c++;
        if (c < n && s[c] == ':')
            return c;
    }
    return -1;
}

/* Where the line at `from` ends: after its LF, else at n. */
static Py_ssize_t
after_line(const unsigned char *s, Py_ssize_t n, Py_ssize_t from)
{
    const unsigned char *lf = memchr(s + from, '\n', (size_t)(n - from));
    return lf == NULL ? n : lf - s + 1;
}

/* The pattern's `^` in multi-line mode has no fast skip, so the regex engine tries it at every
 * byte of the block; this looks at each line's start only and finds the line ends by memchr. */
static PyObject *
without_fields(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyBytes_Check(args[0]) || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "without_fields() takes bytes and a tuple of bytes");
        return NULL;
    }
    PyObject *head = args[0], *names = args[1], *out = NULL;
    /* field_lines of no names would be a pattern of one empty name, which no caller means. */
    if (PyTuple_GET_SIZE(names) == 0) {
        PyErr_SetString(PyExc_ValueError, "without_fields() takes at least one name");
        return NULL;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(names); k++)
        if (!PyBytes_Check(PyTuple_GET_ITEM(names, k))) {
            PyErr_SetString(PyExc_TypeError, "without_fields() takes bytes and a tuple of bytes");
            return NULL;
        }
    const unsigned char *s = (const unsigned char *)PyBytes_AS_STRING(head);
    Py_ssize_t n = PyBytes_GET_SIZE(head), at = 0, kept = 0, written = 0;
    char *w = NULL;
    while (at < n) {
        Py_ssize_t colon = names_field(s, n, at, names);
        if (colon < 0) {
            at = after_line(s, n, at);
            continue;
        }
        /* The field's lines: its first, then each that starts with a blank. */
        Py_ssize_t end = after_line(s, n, colon);
        while (end < n && (s[end] == ' ' || s[end] == '\t'))
            end = after_line(s, n, end);
        if (out == NULL) {
            if ((out = PyBytes_FromStringAndSize(NULL, n)) == NULL)
                return NULL;
            w = PyBytes_AS_STRING(out);
        }
        memcpy(w + written, s + kept, (size_t)(at - kept));
        written += at - kept;
        at = kept = end;
    }
    if (out == NULL) {
        Py_INCREF(head);
        return head;
    }
    memcpy(w + written, s + kept, (size_t)(n - kept));
    written += n - kept;
    if (_PyBytes_Resize(&out, written) < 0)
        return NULL;
    return out;
}

PyDoc_STRVAR(blank_line_end_doc,
"blank_line_end(data, start) -> int\n\n"
"Where the header block of mail (bytes) in LF or CR LF lines ends, from `start` (as bytes.find\n"
"takes it) on: after the first LF followed by an empty line, LF or CR LF; -1 if none.  As\n"
"spamnb.mail.headers.blank_line_end finds it.");

/* bytes.find of LF LF compares at every byte of the block; here memchr finds each LF and only
 * the bytes after it are looked at. */
static PyObject *
blank_line_end(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyBytes_Check(args[0]) || !PyLong_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "blank_line_end() takes bytes and an int");
        return NULL;
    }
    const unsigned char *s = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t n = PyBytes_GET_SIZE(args[0]);
    /* Clipped, not refused, past either end of any bytes, as bytes.find takes its start. */
    Py_ssize_t at = PyNumber_AsSsize_t(args[1], NULL);
    if (at < 0 && (at += n) < 0)
        at = 0;
    while (at < n) {
        const unsigned char *lf = memchr(s + at, '\n', (size_t)(n - at));
        if (lf == NULL)
            break;
        Py_ssize_t i = lf - s;
        if ((i + 1 < n && s[i + 1] == '\n') || (i + 2 < n && s[i + 1] == '\r' && s[i + 2] == '\n'))
            return PyLong_FromSsize_t(i + 1);
        at = i + 1;
    }
    return PyLong_FromLong(-1);
}

PyDoc_STRVAR(verdict_hinted_doc,
"verdict_hinted(head) -> bool\n\n"
"Whether a header block (bytes) holds `-spam` then `nb` or `-checker-version`, ASCII case-blind:\n"
"spamnb.mail.headers.VERDICT_HINT's search.");

/* Whether s[at:n] starts with `text` (lowercase ASCII), ASCII case-blind. */
static int
starts_blind(const unsigned char *s, Py_ssize_t n, Py_ssize_t at, const char *text)
{
    Py_ssize_t size = (Py_ssize_t)strlen(text);
    if (size > n - at)
        return 0;
    for (Py_ssize_t i = 0; i < size; i++)
        if (ascii_lower(s[at + i]) != (unsigned char)text[i])
            return 0;
    return 1;
}

/* The pattern's search stops at every `-` and tries the rest there by the regex engine; here
 * memchr finds each `-` and the names' letters are compared. */
static PyObject *
verdict_hinted(PyObject *module, PyObject *head)
{
    if (!PyBytes_Check(head)) {
        PyErr_SetString(PyExc_TypeError, "verdict_hinted() takes bytes");
        return NULL;
    }
    const unsigned char *s = (const unsigned char *)PyBytes_AS_STRING(head);
    Py_ssize_t n = PyBytes_GET_SIZE(head), at = 0;
    while (at < n) {
        const unsigned char *dash = memchr(s + at, '-', (size_t)(n - at));
        if (dash == NULL)
            break;
        at = dash - s + 1;
        if (starts_blind(s, n, at, "spam") && (starts_blind(s, n, at + 4, "nb") || starts_blind(s, n, at + 4, "-checker-version")))
            Py_RETURN_TRUE;
    }
    Py_RETURN_FALSE;
}

PyDoc_STRVAR(line_end_bytes_doc,
"line_end_bytes(data) -> int\n\n"
"How many bytes of `data` (bytes) are LF or CR: data.count(b'\\n') + data.count(b'\\r'), as\n"
"spamnb.mail.message.line_end_bytes counts them.");

/* How many bytes of s[:n] are `c`, found by memchr. */
static Py_ssize_t
count_byte(const unsigned char *s, Py_ssize_t n, int c)
{
    Py_ssize_t count = 0;
    for (const unsigned char *at = memchr(s, c, (size_t)n); at != NULL; at = memchr(at + 1, c, (size_t)(s + n - at - 1)))
        count++;
    return count;
}

/* bytes.count of one byte compares every byte in turn; memchr skips the lines' text. */
static PyObject *
line_end_bytes(PyObject *module, PyObject *data)
{
    if (!PyBytes_Check(data)) {
        PyErr_SetString(PyExc_TypeError, "line_end_bytes() takes bytes");
        return NULL;
    }
    const unsigned char *s = (const unsigned char *)PyBytes_AS_STRING(data);
    Py_ssize_t n = PyBytes_GET_SIZE(data);
    return PyLong_FromSsize_t(count_byte(s, n, '\n') + count_byte(s, n, '\r'));
}

PyDoc_STRVAR(marked_lines_doc,
"marked_lines(block) -> list[int]\n\n"
"Where each line of `block` (bytes) that starts with `>*From ` starts, in order: the starts of\n"
"spamnb.mail.sources.MARKED_LINE's matches, as its finditer finds them.");

/* The pattern's multi-line `^` has no fast skip: the regex engine tries it at every byte of a
 * message.  Here each `F` is found by memchr, and a `From ` there is marked when only `>`s
 * stand between it and the start of its line. */
static PyObject *
marked_lines(PyObject *module, PyObject *block)
{
    if (!PyBytes_Check(block)) {
        PyErr_SetString(PyExc_TypeError, "marked_lines() takes bytes");
        return NULL;
    }
    const char *s = PyBytes_AS_STRING(block);
    Py_ssize_t n = PyBytes_GET_SIZE(block), at = 0;
    PyObject *found = PyList_New(0);
    if (found == NULL)
        return NULL;
    while (at <= n - 5) {
        const char *f = memchr(s + at, 'F', (size_t)(n - 4 - at));
        if (f == NULL)
            break;
        Py_ssize_t from = f - s, start = from;
        at = from + 1;
        if (memcmp(f, "From ", 5) != 0)
            continue;
        while (start > 0 && s[start - 1] == '>')
            start--;
        if (start > 0 && s[start - 1] != '\n')
            continue;
        PyObject *where = PyLong_FromSsize_t(start);
        if (where == NULL || PyList_Append(found, where) < 0) {
            Py_XDECREF(where);
            Py_DECREF(found);
            return NULL;
        }
        Py_DECREF(where);
        at = from + 5;
    }
    return found;
}

PyDoc_STRVAR(grown_doc,
"grown(index, known, tokens) -> bytearray\n\n"
"Each of a list of str's column in a vocabulary (its list `known`, and its token_index()), a\n"
"token not in it added with the next column, len(known), appended to `known` and indexed:\n"
"a vocabulary's growth.  The columns as native int64s.");

/* One look-up per token, and an insertion per new one, without a call back into Python.
 * The columns go out as int64s, which the caller takes as an array: no list of ints. */
static PyObject *
grown(PyObject *module, PyObject *args)
{
    PyObject *table, *known, *tokens;
    if (!PyArg_ParseTuple(args, "O!O!O!:grown", &PyByteArray_Type, &table, &PyList_Type, &known, &PyList_Type, &tokens))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(tokens);
    size_t mask;
    uint64_t *slots = index_slots(table, &mask);
    PyObject *out = slots == NULL ? NULL : PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)sizeof(int64_t) * n);
    if (out == NULL)
        return NULL;
    int64_t *cols = (int64_t *)PyByteArray_AS_STRING(out);
    /* No Python code runs in this loop: the lists change only here.  A token of another type
     * stops the growth there, the tokens before it added, as the pure path's does. */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *token = PyList_GET_ITEM(tokens, i);
        if (!PyUnicode_CheckExact(token)) {
            PyErr_SetString(PyExc_TypeError, "grown() takes a list of str");
            goto fail;
        }
        if (PyUnicode_READY(token) < 0)
            goto fail;
        uint64_t h = str_hash(token);
        size_t at = place_slot(slots, mask, known, token, h, 1);
        if (at == NO_SLOT) {
            PyErr_SetString(PyExc_ValueError, "a vocabulary's index full: its list was cut short");
            goto fail;
        }
        if (slots[at] != 0) {
            cols[i] = (int64_t)(slots[at] & 0xffffffffULL) - 1;
            continue;
        }
        Py_ssize_t col = PyList_GET_SIZE(known);
        if (col >= (Py_ssize_t)UINT32_MAX - 1) {
            PyErr_SetString(PyExc_OverflowError, "more tokens than a vocabulary's index numbers");
            goto fail;
        }
        if (2 * (size_t)(col + 1) > mask + 1) { /* the index made twice as large first */
            size_t room = mask + 1;
            uint64_t *old = PyMem_Malloc(sizeof(uint64_t) * room);
            if (old == NULL) {
                PyErr_NoMemory();
                goto fail;
            }
            memcpy(old, slots, sizeof(uint64_t) * room);
            if (PyByteArray_Resize(table, (Py_ssize_t)(2 * sizeof(uint64_t) * room)) < 0) {
                PyMem_Free(old);
                goto fail;
            }
            slots = (uint64_t *)PyByteArray_AS_STRING(table);
            mask = 2 * room - 1;
            memset(slots, 0, sizeof(uint64_t) * (mask + 1));
            slots_moved(old, room, slots, mask);
            PyMem_Free(old);
            at = place_slot(slots, mask, known, token, h, 1); /* half empty: never full */
        }
        if (PyList_Append(known, token) < 0)
            goto fail;
        slots[at] = ((h >> 32) << 32) | (uint64_t)(col + 1);
        cols[i] = (int64_t)col;
    }
    return out;

fail:
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef methods[] = {
    {"words", (PyCFunction)(void (*)(void))words, METH_FASTCALL, words_doc},
    {"tags", tags, METH_O, tags_doc},
    {"dotted", (PyCFunction)(void (*)(void))dotted, METH_FASTCALL, dotted_doc},
    {"received_parts", received_parts, METH_O, received_parts_doc},
    {"url_host_tokens", url_host_tokens, METH_O, url_host_tokens_doc},
    {"links", links, METH_O, links_doc},
    {"highest", highest, METH_O, highest_doc},
    {"lowered", lowered, METH_O, lowered_doc},
    {"fields", fields, METH_O, fields_doc},
    {"opener", (PyCFunction)(void (*)(void))opener, METH_FASTCALL, opener_doc},
    {"unescaped", (PyCFunction)(void (*)(void))unescaped, METH_FASTCALL, unescaped_doc},
    {"indexed", indexed, METH_VARARGS, indexed_doc},
    {"counted", counted, METH_VARARGS, counted_doc},
    {"field_numbers", field_numbers, METH_VARARGS, field_numbers_doc},
    {"looked_up", looked_up, METH_VARARGS, looked_up_doc},
    {"without_fields", (PyCFunction)(void (*)(void))without_fields, METH_FASTCALL, without_fields_doc},
    {"marked_lines", marked_lines, METH_O, marked_lines_doc},
    {"blank_line_end", (PyCFunction)(void (*)(void))blank_line_end, METH_FASTCALL, blank_line_end_doc},
    {"verdict_hinted", verdict_hinted, METH_O, verdict_hinted_doc},
    {"line_end_bytes", line_end_bytes, METH_O, line_end_bytes_doc},
    {"grown", grown, METH_VARARGS, grown_doc},
    {"token_index", token_index, METH_O, token_index_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ctokens", "The tokeniser's word scanner, tag cutter, dotted words, Received runs' networks and domains, links' hosts, highest code point, lowering, openers, character references, header fields, token counter, blob index, field numbers, look-ups, fields' removal, an mbox's marked lines, a vocabulary's index and growth, a header block's end, the verdict's hint and the line ends' bytes in C (see spamnb.text.tokens).", -1, methods,
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
