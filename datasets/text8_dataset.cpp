// The `text8` dataset: 10^8 characters of cleaned Wikipedia text (a-z and space), for
// character-level language models, split by `relpos data prepare text8 --from FILE`
// (datasets/prepare_char_corpus.cpp).
#include "datasets/char_corpus_source.h"

namespace relpos {

RELPOS_REGISTER_DATASET(
    "text8",
    {.kind = TaskKind::language_modelling,
     .description = "10^8 characters of cleaned Wikipedia text (a-z, space), for character LMs",
     .how_to_get =
         "text8: download http://mattmahoney.net/dc/text8.zip (10^8 characters of cleaned\n"
         "  Wikipedia text, a-z and space), then relpos data prepare text8 --from text8.zip --out "
         "DIR\n"
         "  writes DIR/train.txt, valid.txt, test.txt (the last 5M characters test, 5M before "
         "valid).",
     .make = make_source<CharCorpusSource>,
     .prepare = prepare_text8});

}  // namespace relpos
