// The `enwik8` dataset: the first 10^8 bytes of an English Wikipedia dump, for character-level
// language models (Transformer-XL's benchmark), split by `relpos data prepare enwik8 --from FILE`
// (datasets/prepare_char_corpus.cpp).
#include "datasets/char_corpus_source.h"

namespace relpos {

RELPOS_REGISTER_DATASET(
    "enwik8",
    {.kind = TaskKind::language_modelling,
     .description = "10^8 bytes of English Wikipedia XML, for character language models",
     .how_to_get =
         "enwik8: download http://mattmahoney.net/dc/enwik8.zip (the first 10^8 bytes of an\n"
         "  English Wikipedia dump), then relpos data prepare enwik8 --from enwik8.zip --out DIR\n"
         "  writes DIR/train.txt, valid.txt, test.txt (90M / 5M / 5M bytes, Transformer-XL's "
         "split).\n"
         "  --vocabulary reference drops the newline bytes, as Transformer-XL's preparation and\n"
         "  reader do (204 symbols; train with data.vocabulary: all to count them as it does).",
     .make = make_source<CharCorpusSource>,
     .prepare = prepare_enwik8});

}  // namespace relpos
