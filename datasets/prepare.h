// `relpos data prepare NAME --out DIR [--key value ...]`: each dataset that can be made on a
// machine without internet writes its standard files into DIR. The options after NAME arrive as
// Options (core/options.h), so a misspelt one is refused by name.
#pragma once

#include <functional>
#include <string>

#include "core/options.h"

namespace relpos {

struct PrepareRequest {
  std::string out_dir;
  Options options{"data prepare"};
};

// Each refuses an option it does not know before it writes anything, then writes its files into
// request.out_dir (created if missing) and returns a one-line summary for the user.
std::string prepare_listops(const PrepareRequest& request);
// prepare_listops's options and their defaults, for its instructions.
std::string listops_prepare_options();
std::string prepare_mnist(const PrepareRequest& request);
std::string prepare_fashion_mnist(const PrepareRequest& request);
// Character corpora (prepare_char_corpus.cpp): DIR/train.txt, valid.txt, test.txt.
std::string prepare_enwik8(const PrepareRequest& request);  // --from FILE[.zip]
std::string prepare_text8(const PrepareRequest& request);   // --from FILE[.zip]
std::string prepare_moby_dick(const PrepareRequest& request);

using Preparer = std::function<std::string(const PrepareRequest&)>;

// The registered preparer of dataset `name` (datasets/dataset_registry.h); an empty function
// for a dataset that cannot be made here and for an unknown name.
Preparer find_preparer(const std::string& name);

// How to get dataset `name` and the layout its reader expects (its registry entry's text); an
// unknown name fails listing the registered ones.
std::string download_instructions(const std::string& name);

}  // namespace relpos
