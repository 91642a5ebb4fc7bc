// ListOps: generated labels checked by an independent parser and evaluator of the source text,
// determinism and disjoint splits of `prepare listops`, both tokenizers on known strings, and
// the TSV reader's errors (each naming file, line and what was expected).
#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "datasets/listops.h"
#include "datasets/listops_generator.h"
#include "datasets/prepare.h"
#include "tests/harness.h"

using namespace relpos;
using relpos::test::error_of;
namespace fs = std::filesystem;

namespace {

// A fresh folder under the system temp dir, removed with everything in it.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() /
             ("relpos_test_listops_" + name + "_" +
              std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()))) {
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name, const std::string& content) const {
    const std::string p = (path / name).string();
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A parsed tree: op is "[MIN" etc., or empty for a value.
struct Node {
  std::string op;
  int value = 0;
  std::vector<Node> children;
};

// Parses the source by its tokens alone (parentheses skipped): "[OP" opens a node, "]" closes it.
Node parse(const std::string& source) {
  std::istringstream in(source);
  std::vector<Node> open;
  Node root;
  std::string token;
  while (in >> token) {
    if (token == "(" || token == ")") continue;
    Node node;
    if (token[0] == '[') {
      open.push_back(Node{token, 0, {}});
      continue;
    }
    if (token == "]") {
      REQUIRE(!open.empty());
      node = std::move(open.back());
      open.pop_back();
    } else {
      REQUIRE((token.size() == 1 && std::isdigit(static_cast<unsigned char>(token[0]))));
      node.value = token[0] - '0';
    }
    if (open.empty())
      root = std::move(node);
    else
      open.back().children.push_back(std::move(node));
  }
  REQUIRE(open.empty());
  return root;
}

// LRA's to_string of the left-nested pairs ((((op, c1), c2), ...), ']').
std::string render(const Node& n) {
  if (n.op.empty()) return std::to_string(n.value);
  std::string t = "( " + n.op + " " + render(n.children[0]) + " )";
  for (size_t i = 1; i < n.children.size(); ++i) t = "( " + t + " " + render(n.children[i]) + " )";
  return "( " + t + " ] )";
}

int evaluate(const Node& n) {
  if (n.op.empty()) return n.value;
  std::vector<int> v;
  for (const Node& c : n.children) v.push_back(evaluate(c));
  std::sort(v.begin(), v.end());
  if (n.op == "[MIN") return v.front();
  if (n.op == "[MAX") return v.back();
  if (n.op == "[MED") return (v[(v.size() - 1) / 2] + v[v.size() / 2]) / 2;
  REQUIRE(n.op == "[SM");
  int sum = 0;
  for (const int x : v) sum += x;
  return sum % 10;
}

// Length (values + operators + closing brackets) and depth, checking arity on the way.
void measure(const Node& n, int depth, int64_t& length, int& max_depth) {
  max_depth = std::max(max_depth, depth);
  length += n.op.empty() ? 1 : 2;
  if (!n.op.empty()) CHECK((n.children.size() >= 2 && n.children.size() <= 10));
  for (const Node& c : n.children) measure(c, depth + 1, length, max_depth);
}

}  // namespace

TEST_CASE("listops: generated labels match an independent evaluator; layout and limits hold") {
  const std::vector<ListOpsTree> trees = generate_listops(7, 300);
  REQUIRE(trees.size() == 300);
  std::set<int> labels;
  for (const ListOpsTree& tree : trees) {
    const Node root = parse(tree.source);
    CHECK(render(root) == tree.source);  // LRA's exact parenthesised layout
    CHECK(evaluate(root) == tree.label);
    int64_t length = 0;
    int depth = 0;
    measure(root, 1, length, depth);
    CHECK(length == tree.length);
    CHECK((length > 500 && length < 2000));
    CHECK(depth <= 10);
    labels.insert(tree.label);
  }
  CHECK(labels.size() == 10);
  CHECK(render(parse("( ( ( [MED 2 ) 7 ) ] )")) == "( ( ( [MED 2 ) 7 ) ] )");
  CHECK(evaluate(parse("( ( ( [MED 2 ) 7 ) ] )")) == 4);  // the evaluator itself: mean 4.5 -> 4
}

TEST_CASE("listops: prepare is deterministic per seed, splits disjoint, files read back") {
  TempDir a("a"), b("b"), c("c");
  const auto prepare = [](const TempDir& dir, int seed) {
    PrepareRequest request{dir.path.string(), Options("data prepare")};
    request.options.set("train", 120).set("val", 40).set("test", 40).set("seed", seed);
    return prepare_listops(request);
  };
  const std::string summary = prepare(a, 3);
  CHECK(summary.find("120 / 40 / 40 distinct trees (seed 3, mean length") != std::string::npos);
  prepare(b, 3);
  prepare(c, 4);
  std::set<std::string> sources;
  int64_t lines = 0;
  for (const std::string name : {"basic_train.tsv", "basic_val.tsv", "basic_test.tsv"}) {
    const std::string text = slurp(a.path / name);
    CHECK(text == slurp(b.path / name));
    CHECK(text != slurp(c.path / name));
    CHECK(text.rfind("Source\tTarget\n", 0) == 0);
    std::istringstream in(text);
    std::string line;
    std::getline(in, line);
    std::vector<int64_t> labels;
    while (std::getline(in, line)) {
      sources.insert(line.substr(0, line.find('\t')));
      labels.push_back(std::stoi(line.substr(line.find('\t') + 1)));
      ++lines;
    }
    const Dataset data = read_listops((a.path / name).string());
    REQUIRE(data.examples.size() == labels.size());
    for (size_t i = 0; i < labels.size(); ++i) CHECK(data.examples[i].label == labels[i]);
  }
  CHECK(lines == 200);
  CHECK(sources.size() == 200);  // no duplicates within or across splits

  PrepareRequest typo{a.path.string(), Options("data prepare")};
  typo.options.set("trian", 5);
  CHECK(error_of([&] { prepare_listops(typo); }).find("unknown option 'trian'") !=
        std::string::npos);
  // A split of no trees would be refused by the reader; it is refused when asked for.
  PrepareRequest empty{(a.path / "empty").string(), Options("data prepare")};
  empty.options.set("test", 0);
  CHECK(error_of([&] { prepare_listops(empty); }) ==
        "[data prepare] listops --test must be in [1, 2^63 / 3), got 0");
  CHECK(!std::filesystem::exists(a.path / "empty"));
  // The instructions name every option with the default prepare_listops uses.
  const std::string instructions = download_instructions("listops");
  for (const char* option :
       {"--train 96000 ", "--val 2000 ", "--test 2000 ", "--seed 0", "--min-length 500 ",
        "--max-length 2000 ", "--max-depth 10", "--max-args 10"})
    CHECK_MESSAGE(instructions.find(option) != std::string::npos, option);

  // A folder that cannot be made is refused before any tree is drawn (10^7 trees would take
  // minutes; they were drawn first, then the folder failed).
  const std::filesystem::path file = a.path / "basic_train.tsv";
  PrepareRequest under_file{(file / "sub").string(), Options("data prepare")};
  under_file.options.set("train", 10'000'000);
  CHECK(error_of([&] { prepare_listops(under_file); }) ==
        "[data prepare] cannot create the folder '" + (file / "sub").string() +
            "': Not a directory");
}

TEST_CASE("listops: generator refuses bad limits and limits that admit too few trees") {
  ListOpsGeneratorConfig bad;
  bad.min_length = 10;
  bad.max_length = 11;
  CHECK(error_of([&] { ListOpsGenerator(0, bad); }).find("length limits must satisfy") !=
        std::string::npos);
  // min_length + 1 wrapped for the largest int64: 10^7 draws (22 s) before the refusal.
  bad.min_length = std::numeric_limits<int64_t>::max();
  bad.max_length = 2000;
  CHECK(error_of([&] { ListOpsGenerator(0, bad); }).find("length limits must satisfy") !=
        std::string::npos);
  ListOpsGeneratorConfig wide;
  wide.max_args = 5000;
  CHECK(error_of([&] { ListOpsGenerator(0, wide); }) ==
        "[listops generator] max_args must be in [2, 1000], got 5000");
  ListOpsGeneratorConfig values_only;  // depth 1: single digits, only 10 distinct trees
  values_only.min_length = 0;
  values_only.max_length = 2;
  values_only.max_depth = 1;
  CHECK(generate_listops(0, 10, values_only).size() == 10);
  CHECK(error_of([&] {
          generate_listops(0, 11, values_only);
        }).find("only 10 distinct trees found for 11 requested") != std::string::npos);
}

TEST_CASE("listops: both tokenizers map known strings to known ids") {
  const std::string s = "( ( ( [MAX 2 ) ( ( ( [SM 0 ) 9 ) ] ) ) ] )";
  CHECK(tokenize_listops(s, ListOpsTokenizer::lra) == std::vector<int32_t>{2, 8, 4, 6, 15, 5, 5});
  CHECK(tokenize_listops(s, ListOpsTokenizer::lra_2021) == std::vector<int32_t>{2, 7, 4, 5, 14});
  CHECK(tokenize_listops("[MIN [MED 1 ] [FIRST ]", ListOpsTokenizer::lra) ==
        std::vector<int32_t>{1, 3, 7, 5, 16, 5});
  CHECK(tokenize_listops("[MIN [MED 1 ] [FIRST ]", ListOpsTokenizer::lra_2021) ==
        std::vector<int32_t>{1, 3, 6, 15});
  // A known token with more after it is unknown, not the known one: "[MIN]" reads as "[MINX".
  CHECK(tokenize_listops("[MIN] [MAXIMUM 3 ]( 4)", ListOpsTokenizer::lra) ==
        std::vector<int32_t>{16, 16, 9, 5, 10});
  CHECK(listops_vocab_size(ListOpsTokenizer::lra) == 17);
  CHECK(listops_vocab_size(ListOpsTokenizer::lra_2021) == 16);
  CHECK(listops_tokenizer_from_name("lra_2021") == ListOpsTokenizer::lra_2021);
  CHECK(error_of([] { listops_tokenizer_from_name("lra2"); }) ==
        "[listops] unknown tokenizer 'lra2'; known: lra, lra_2021");
}

TEST_CASE("listops: reader takes CRLF lines and a last line without newline; truncates") {
  TempDir dir("good");
  const std::string p =
      dir.file("basic_val.tsv", "Source\tTarget\r\n( ( [SM 4 ) 5 ] )\t9\r\n( ( [MIN 3 ) 8 ] )\t3");
  const Dataset data = read_listops(p, ListOpsTokenizer::lra, 3);
  CHECK(data.name == "listops/basic_val");
  CHECK(data.vocab_size == 17);
  CHECK(data.num_classes == 10);
  REQUIRE(data.examples.size() == 2);
  CHECK(data.examples[0].tokens == std::vector<int32_t>{4, 10, 11});
  CHECK(data.examples[0].label == 9);
  CHECK(data.examples[1].tokens == std::vector<int32_t>{1, 9, 14});
  CHECK(data.examples[1].label == 3);
}

TEST_CASE("listops: reader errors name the file, the line and what was expected") {
  TempDir dir("bad");
  const auto error_for = [&](const std::string& content) {
    const std::string p = dir.file("bad.tsv", content);
    return error_of([&] { read_listops(p); }).substr(p.size() + 12);  // after "[listops] path: "
  };
  const std::string head = "Source\tTarget\n";
  CHECK(error_for("Src\tTgt\n[MAX 1 ]\t1\n") ==
        "line 1: expected the header 'Source<TAB>Target', found 'Src\\x09Tgt'");
  // What is found is shown, so a byte-order mark a text editor wrote is seen.
  CHECK(error_for("\xef\xbb\xbfSource\tTarget\n[MAX 1 ]\t1\n") ==
        "line 1: expected the header 'Source<TAB>Target', found "
        "'\\xef\\xbb\\xbfSource\\x09Target'");
  CHECK(error_for("") == "line 1: expected the header 'Source<TAB>Target'");
  CHECK(error_for(head) == "line 2: expected examples after the header");
  CHECK(error_for(head + "[MAX 1 ]\t1\n[MAX 2 ]\n") ==
        "line 3: expected 'source<TAB>target', found no tab");
  CHECK(error_for(head + "[MAX 1 ]\tseven\n") == "line 2: target 'seven' is not an integer 0-9");
  CHECK(error_for(head + "[MAX 1 ]\t10\n") == "line 2: target '10' is not an integer 0-9");
  CHECK(error_for(head + "[MAX 1 ]\t\n") == "line 2: target '' is not an integer 0-9");
  CHECK(error_for(head + "( )\t4\n") == "line 2: empty source (no tokens before the tab)");
  // The fixed LRA vocabulary is closed: a token outside it names its line and column.
  const std::string not_in =
      "' is not in the ListOps vocabulary ([MIN [MAX [MED [SM ] 0-9, parentheses)";
  CHECK(error_for(head + "[MAX 1 ]\t1\n( [FOO 2 3 ] )\t1\n") ==
        "line 3, column 3: token '[FOO" + not_in);
  std::string with_nul = head + "[MAX 1 ";
  with_nul.push_back('\0');
  with_nul += " ]\t1\n";
  CHECK(error_for(with_nul) == "line 2, column 8: token '\\x00" + not_in);
  CHECK(error_for(head + "[MIN \xff ]\t1\n") == "line 2, column 6: token '\\xff" + not_in);
  CHECK(error_for(head + "[MAX 12 ]\t1\n") == "line 2, column 6: token '12" + not_in);
  CHECK(error_for(head + "[MAX 1 ]\t1\n[MAX 1 ] ( [MINIMUM] 2 )\t1\n") ==
        "line 3, column 12: token '[MINIMUMX" + not_in);
  CHECK(error_for(head + std::string(kListOpsMaxLineBytes + 1, '1') + "\t1\n")
            .find("line 2: line longer than 1048576 bytes") == 0);
  CHECK(error_of([&] {
          read_listops((dir.path / "missing.tsv").string());
        }).find("missing.tsv: open: cannot read the file") != std::string::npos);
}
