// The `chars` dataset: any text of the user's own for a character-level language model, as three
// files train.txt, valid.txt and test.txt (datasets/char_corpus_source.h).
#include "datasets/char_corpus_source.h"

namespace relpos {

RELPOS_REGISTER_DATASET(
    "chars",
    {.kind = TaskKind::language_modelling,
     .description = "your own text for a character LM: train.txt, valid.txt, test.txt",
     .how_to_get =
         "chars is your own text: put train.txt, valid.txt and test.txt (raw bytes; every byte of\n"
         "  valid and test must occur in train, or set data.vocabulary: all) in DIR.",
     .make = make_source<CharCorpusSource>,
     .prepare = nullptr});

}  // namespace relpos
