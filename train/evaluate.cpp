// Evaluation and predictions files (train/evaluate.h).
#include "train/evaluate.h"

#include <hdf5.h>
#include <unistd.h>

#include <filesystem>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "core/error.h"
#include "core/ops.h"
#include "datasets/hdf5_handle.h"

namespace relpos {

ClassifierInputs classifier_inputs(const Batch& batch, Device device) {
  ClassifierInputs in;
  in.tokens = batch.tokens.to(device);
  in.key_mask = batch.key_mask.to(device);
  if (batch.tokens2.defined()) {
    in.tokens2 = batch.tokens2.to(device);
    in.key_mask2 = batch.key_mask2.to(device);
  }
  return in;
}

DataLoaderOptions run_loader_options(const RunConfig& config, const Classifier& model,
                                     bool training) {
  DataLoaderOptions o;
  o.batch_size = training || config.data.eval_batch_size == 0 ? config.data.batch_size
                                                              : config.data.eval_batch_size;
  o.shuffle = training;
  o.seed = config.seed;
  o.drop_last = training && config.data.drop_last;
  o.prefetch = config.data.prefetch;
  const SpecialTokens special = model.special_tokens();
  o.collate.cls_id = special.cls_id;
  o.collate.sep_id = special.sep_id;
  o.collate.pad_id = 0;
  o.collate.index_dtype = DType::i64;
  return o;
}

namespace {

std::vector<int64_t> to_vector(const Tensor& t) {
  const Tensor c = t.to(Device::cpu()).to(DType::i64).contiguous();
  const int64_t* p = c.data<int64_t>();
  return {p, p + c.numel()};
}

}  // namespace

Evaluation evaluate(Classifier& model, DataLoader& loader, Device device, int64_t max_batches,
                    bool keep_logits) {
  model.eval();
  NoGradGuard no_grad;
  MetricAccumulator metrics(model.config().num_classes);
  std::vector<Tensor> all_logits, all_labels;
  loader.begin_epoch(0);
  int64_t batches = 0;
  for (Batch batch; (max_batches == 0 || batches < max_batches) && loader.next(batch); ++batches) {
    const Tensor logits = model.forward(classifier_inputs(batch, device)).value();  // [B, C]
    const Tensor labels = batch.labels.to(device);
    const double loss_sum =
        cross_entropy(logits, labels, -100, Reduction::sum).to(Device::cpu()).item();
    metrics.add(loss_sum, to_vector(argmax(logits, 1)), to_vector(batch.labels));
    if (keep_logits) {
      all_logits.push_back(logits.to(Device::cpu()).to(DType::f32));
      all_labels.push_back(batch.labels.to(DType::i64));
    }
  }
  Evaluation e;
  e.metrics = metrics.result();
  if (keep_logits && !all_logits.empty()) {
    e.logits = cat(all_logits, 0);
    e.labels = cat(all_labels, 0);
  }
  return e;
}

namespace {

void write_dataset(hid_t file, const char* name, const Tensor& t, hid_t file_type,
                   hid_t memory_type, const std::string& path) {
  std::vector<hsize_t> dims(t.shape().begin(), t.shape().end());
  H5Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  H5Handle data(
      H5Dcreate2(file, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose);
  const Tensor c = t.contiguous();
  RELPOS_CHECK(data.valid() && H5Dwrite(data.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                        c.raw_data()) >= 0,
               "predictions", "cannot write dataset '{}' to '{}'", name, path);
}

}  // namespace

void write_predictions(const std::string& path, const Tensor& logits, const Tensor& labels) {
  RELPOS_CHECK(logits.defined() && logits.dim() == 2 && labels.dim() == 1 &&
                   labels.size(0) == logits.size(0),
               "predictions", "need logits [n, classes] and labels [n]");
  namespace fs = std::filesystem;
  const fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  const std::string temp = path + ".tmp." + std::to_string(getpid());
  H5QuietErrors quiet;
  {
    H5Handle file(H5Fcreate(temp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    RELPOS_CHECK(file.valid(), "predictions", "cannot create '{}'", path);
    try {
      write_dataset(file.get(), "logits", logits.to(DType::f32), H5T_IEEE_F32LE, H5T_NATIVE_FLOAT,
                    path);
      write_dataset(file.get(), "labels", labels.to(DType::i64), H5T_STD_I64LE, H5T_NATIVE_INT64,
                    path);
    } catch (...) {
      file.reset();
      fs::remove(temp);
      throw;
    }
    RELPOS_CHECK(file.reset(), "predictions", "cannot finish writing '{}'", path);
  }
  fs::rename(temp, target);
}

}  // namespace relpos
