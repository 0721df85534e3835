// The driver's training and I/O workloads: the MLP and GPT models and their trainer, the
// shared-inputs reader, save/load, and the mapping of CPU-clock counters to result fields.
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "burtorch/burtorch.hpp"
#include "check.hpp"
#include "cpu_clocks.hpp"
#include "gpt.hpp"
#include "gradcheck.hpp"
#include "inputs.hpp"
#include "mlp.hpp"
#include "random_inputs.hpp"
#include "save_load.hpp"
#include "training.hpp"

using namespace burtorch;
using namespace burtorch::driver;
using random_inputs::randomize;
using random_inputs::sampleRows;

namespace {

const MlpShape kSmallMlp{3, 2, 5, 4};       // context, embedding, vocab, hidden
const GptShape kSmallGpt{2, 2, 3, 4, 7};    // layers, heads, block size, d_model, vocab

std::string tempPath(const std::string& name) {
  const char* dir = std::getenv("BURTORCH_TEST_TMP");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

void writeBytes(const std::string& path, const void* data, std::size_t size) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) return;
  std::fwrite(data, 1, size, file);
  std::fclose(file);
}

// A .bin array as workloads/inputs.py writes it.
void writeArray(const std::string& path, std::uint32_t dtype, std::vector<std::uint64_t> dims, const void* data,
                std::size_t bytes) {
  std::vector<unsigned char> out(48 + bytes);
  std::memcpy(out.data(), "BBARRAY1", 8);
  const auto ndim = static_cast<std::uint32_t>(dims.size());
  dims.resize(4, 1);
  std::memcpy(out.data() + 8, &dtype, 4);
  std::memcpy(out.data() + 12, &ndim, 4);
  std::memcpy(out.data() + 16, dims.data(), 32);
  if (bytes) std::memcpy(out.data() + 48, data, bytes);
  writeBytes(path, out.data(), out.size());
}

// A small MLP run's inputs folder: 4 steps of batch 2 over 5 samples.
std::string writeMlpInputs(const std::string& name, const std::string& extraConfig = "") {
  const std::string folder = tempPath(name);
  std::string mkdir = "mkdir -p '" + folder + "'";
  if (std::system(mkdir.c_str()) != 0) return folder;
  const std::size_t params = countValues(kSmallMlp.tensors());
  std::vector<float> values(params);
  Rng rng(3);
  for (float& v : values) v = rng.uniform<float>(-1, 1);
  const std::vector<std::uint8_t> samples = sampleRows(5, kSmallMlp.sampleWidth(), kSmallMlp.vocab, 4);
  const std::vector<std::int32_t> batches{0, 1, 2, 3, 4, 0, 3, 3};
  writeArray(folder + "/params.bin", 1, {params}, values.data(), values.size() * 4);
  writeArray(folder + "/samples.bin", 3, {5, kSmallMlp.sampleWidth()}, samples.data(), samples.size());
  writeArray(folder + "/batches.bin", 2, {4, 2}, batches.data(), batches.size() * 4);
  const std::string config = "format=1\nworkload=mlp\nlearning_rate=0.1\nsteps=4\nbatch=2\nparam_count=" +
                             std::to_string(params) + "\nparams=" + formatTensors(kSmallMlp.tensors()) +
                             "\ncontext=3\nembedding=2\nvocab=5\nhidden_dim=4\n" + extraConfig;
  writeBytes(folder + "/config.txt", config.data(), config.size());
  return folder;
}

Options optionsFor(const std::string& folder, std::int64_t iterations) {
  Options options;
  options.inputs = folder;
  options.iterations = iterations;
  return options;
}

}  // namespace

TEST_CASE("MLP and GPT: parameters in the inputs' order, one sample's graph as large as declared") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  {
    Trainer<Mlp<double>> trainer(kSmallMlp, 1, 0.1);
    CHECK(pool.size() == countValues(kSmallMlp.tensors()));  // 5x2 + 4x6 + 4 + 5x4 + 5
    CHECK(pool.size() == 63 && pool.leadingLeaves() == 63);
    CHECK(formatTensors(kSmallMlp.tensors()) == "wte:5x2,w1:4x6,b1:4,w2:5x4,b2:5");
    const std::vector<std::uint8_t> sample = sampleRows(1, kSmallMlp.sampleWidth(), kSmallMlp.vocab, 1);
    trainer.model().losses(sample.data(), 1)[0];
    CHECK(pool.size() - 63 == kSmallMlp.graphNodes());
  }
  pool.rewind(Mark{});
  {
    Trainer<Gpt<double>> trainer(kSmallGpt, 1, 0.1);
    CHECK(pool.size() == countValues(kSmallGpt.tensors()));
    const std::size_t params = pool.size(), capacity = pool.capacity();
    const std::vector<std::uint8_t> window = sampleRows(1, kSmallGpt.sampleWidth(), kSmallGpt.vocab, 2);
    trainer.model().losses(window.data(), 1)[0];
    CHECK(pool.size() - params == kSmallGpt.graphNodes());
    CHECK(pool.capacity() == capacity);  // reserved ahead: building the graph did not grow the pool
  }
  const GptShape paper;
  CHECK(countValues(paper.tensors()) == 46337);
  CHECK(formatTensors(paper.tensors()).rfind("wte:65x24,wpe:8x24,h0.ln1_g:24,h0.ln1_b:24,h0.wq:24x24,", 0) == 0);
  for (const std::size_t hidden : {4, 16, 32, 64, 128, 512, 1024}) {
    MlpShape mlp;
    mlp.hidden = hidden;
    CHECK(countValues(mlp.tensors()) == 1755 + 1052 * hidden);  // the paper's 5,963 ... 1,079,003
  }
  pool.rewind(Mark{});
}

TEST_CASE("MLP and GPT: every parameter's gradient against finite differences (FP64)") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  {
    Trainer<Mlp<double>> trainer(kSmallMlp, 1, 0.1);
    randomize(trainer.parameters(), 5);
    const std::vector<std::uint8_t> sample = sampleRows(1, kSmallMlp.sampleWidth(), kSmallMlp.vocab, 6);
    EXPECT_NODE_GRADIENTS("mlp", trainer.parameters(), [&] { return trainer.model().losses(sample.data(), 1)[0]; });
  }
  pool.rewind(Mark{});
  {
    Trainer<Gpt<double>> trainer(kSmallGpt, 1, 0.1);
    randomize(trainer.parameters(), 7);
    const std::vector<std::uint8_t> window = sampleRows(1, kSmallGpt.sampleWidth(), kSmallGpt.vocab, 8);
    EXPECT_NODE_GRADIENTS("gpt", trainer.parameters(), [&] { return trainer.model().losses(window.data(), 1)[0]; });
  }
  pool.rewind(Mark{});
}

// One step of `batch` samples in graphs of samplesPerGraph against the same SGD step computed from
// one backward per sample: the loss and every parameter within FP64 rounding, every gradient zero.
template <class Model>
bool stepsAsPerSample(const typename Model::Shape& shape, std::size_t batch, std::size_t samplesPerGraph) {
  using T = double;
  auto& pool = Pool<T>::local();
  pool.rewind(Mark{});
  Trainer<Model> trainer(shape, batch, 0.25, samplesPerGraph);
  const NodeRange<T> params = trainer.parameters();
  randomize(params, 9);
  const std::size_t width = shape.sampleWidth();
  const std::vector<std::uint8_t> rows = sampleRows(batch, width, shape.vocab, 10);
  const Mark mark = pool.mark();

  double lossSum = 0;
  for (std::size_t s = 0; s < batch; ++s) {
    pool.rewind(mark);
    const Value<T> loss = trainer.model().losses(rows.data() + s * width, 1)[0];
    lossSum += loss.data();
    backward(loss);
  }
  pool.rewind(mark);
  std::vector<T> expected;
  for (std::size_t k = 0; k < params.size(); ++k) expected.push_back(params[k].data() - 0.25 * params[k].grad() / static_cast<T>(batch));
  zeroGrad(params);

  const std::size_t capacity = pool.capacity();
  bool ok = check::close(trainer.step(rows.data()), lossSum / static_cast<T>(batch), 1e-14, 1e-15);
  for (std::size_t k = 0; k < params.size(); ++k) ok = ok && check::close(params[k].data(), expected[k], 1e-13, 1e-15) && params[k].grad() == 0.0;
  ok = ok && pool.size() == mark.nodes && pool.capacity() == capacity;
  pool.rewind(Mark{});
  return ok;
}

TEST_CASE("trainer: a step is SGD on the batch's mean gradient, returns the mean loss, frees each graph") {
  // One graph per sample, the batch in two graphs (2 + 1 samples), and the whole batch as one; a
  // batch of one sample takes its layers' steps in the sweep (linearTokenStepBackward).
  for (const auto& [batch, samplesPerGraph] : {std::array<std::size_t, 2>{3, 1}, {3, 2}, {3, 3}, {1, 1}}) {
    CHECK(stepsAsPerSample<Gpt<double>>(kSmallGpt, batch, samplesPerGraph));
    CHECK(stepsAsPerSample<Mlp<double>>(kSmallMlp, batch, samplesPerGraph));
  }
}

TEST_CASE("inputs: a folder is read back; a broken one is refused with the reason") {
  const std::string folder = writeMlpInputs("inputs_ok");
  TrainingInputs inputs;
  std::string error;
  CHECK(inputs.open(folder, "mlp", error));
  CHECK(error.empty());
  CHECK(inputs.steps() == 4 && inputs.batch() == 2 && inputs.sampleWidth() == 4 && inputs.paramCount() == 63);
  CHECK(inputs.learningRate() == 0.1 && inputs.config().integer("hidden_dim") == 4);
  std::vector<std::uint8_t> rows(2 * 4);
  CHECK(inputs.readBatch(3, rows.data()));  // step 3 is samples 3, 3
  TrainingInputs again;
  CHECK(again.open(folder, "mlp", error));
  std::vector<std::uint8_t> first(2 * 4);
  CHECK(again.readBatch(1, first.data()));  // step 1 is samples 2, 3
  CHECK(std::memcmp(rows.data(), rows.data() + 4, 4) == 0 && std::memcmp(first.data() + 4, rows.data(), 4) == 0);
  std::vector<float> params(63);
  CHECK(inputs.readParams(params.data()));

  TrainingInputs wrongWorkload;
  CHECK(!wrongWorkload.open(folder, "gpt", error) && error.find("'mlp', not 'gpt'") != std::string::npos);
  TrainingInputs missing;
  CHECK(!missing.open(tempPath("no_such_folder"), "mlp", error) && error.find("config.txt") != std::string::npos);

  const std::vector<std::int32_t> outside{0, 1, 2, 3, 4, 5, 3, 3};  // row 5 of 5 rows
  writeArray(folder + "/batches.bin", 2, {4, 2}, outside.data(), outside.size() * 4);
  TrainingInputs badBatch;
  CHECK(!badBatch.open(folder, "mlp", error) && error.find("batches.bin") != std::string::npos);

  writeMlpInputs("inputs_ok");
  writeArray(folder + "/batches.bin", 2, {4, 2}, outside.data(), outside.size() * 4 - 4);  // truncated
  TrainingInputs truncated;
  CHECK(!truncated.open(folder, "mlp", error) && error.find("does not match its header") != std::string::npos);

  writeMlpInputs("inputs_ok");
  const std::vector<std::uint8_t> badTokens(5 * 4, 9);  // vocab is 5
  writeArray(folder + "/samples.bin", 3, {5, 4}, badTokens.data(), badTokens.size());
  TrainingInputs badToken;
  CHECK(!badToken.open(folder, "mlp", error) && error.find("token id") != std::string::npos);

  writeMlpInputs("inputs_ok");
  writeArray(folder + "/params.bin", 2, {63}, params.data(), params.size() * 4);  // int32, not float32
  TrainingInputs wrongType;
  CHECK(!wrongType.open(folder, "mlp", error) && error.find("params.bin") != std::string::npos);
}

TEST_CASE("training workload: runs from its inputs folder; refuses what does not match") {
  auto& pool = Pool<float>::local();
  pool.rewind(Mark{});
  const std::string folder = writeMlpInputs("inputs_run");
  const std::array<Param, 2> given{{{"hidden_dim", 4.0}, {"batch", 2.0}}};
  {
    TrainingWorkload<Mlp<float>> workload(given, optionsFor(folder, 3));
    CHECK(workload.error().empty());
    for (int k = 0; k < 4; ++k) {
      if (k % 2) workload.prepare();  // prepared or not, a step reads its own batch
      workload();
    }
    const auto outputs = workload.outputs();
    CHECK(outputs.size() == 3 && outputs[2].name == "loss_2" && std::isfinite(outputs[2].value));
    JsonLine json;
    workload.extras(json);
    CHECK(json.finish() == "{\"param_count\":63}\n");
  }
  pool.rewind(Mark{});
  const std::array<Param, 2> otherBatch{{{"hidden_dim", 4.0}, {"batch", 8.0}}};
  CHECK(TrainingWorkload<Mlp<float>>(otherBatch, optionsFor(folder, 3)).error().find("--param batch") != std::string::npos);
  CHECK(TrainingWorkload<Mlp<float>>(given, optionsFor(folder, 5)).error().find("fewer than") != std::string::npos);
  CHECK(TrainingWorkload<Mlp<float>>(given, optionsFor("", 3)).error().find("--inputs") != std::string::npos);
  CHECK(TrainingWorkload<Gpt<float>>({}, optionsFor(folder, 3)).error().find("not 'gpt'") != std::string::npos);
  const std::string wrongShape = writeMlpInputs("inputs_shape", "params=wte:5x2,w1:6x4,b1:4,w2:5x4,b2:5\n");
  CHECK(TrainingWorkload<Mlp<float>>(given, optionsFor(wrongShape, 3)).error().find("parameter tensors") != std::string::npos);
  CHECK(pool.size() == 0);
}

namespace {

// Three save/load steps; the extras line they report, or "" if a value did not come back exactly.
template <class Workload>
std::string saveLoadExtras() {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  const std::array<Param, 2> params{{{"a", -4.0}, {"b", 2.0}}};
  Workload workload(params, Options{});
  for (int k = 0; k < 3; ++k) workload();
  const auto out = workload.outputs();
  const double expected[7] = {-4.0, 2.0, -1.0, 6.0, -7.0, 49.0, 2421.0 / 98.0};
  bool exact = out[0].name == "a" && out[6].name == "g";
  for (std::size_t k = 0; k < 7; ++k) exact = exact && out[k].value == expected[k];
  JsonLine json;
  workload.extras(json);
  pool.rewind(Mark{});
  return exact ? json.finish() : "";
}

}  // namespace

TEST_CASE("save/load workload: the seven activations come back exactly from a 56-byte file") {
  const std::string lean = saveLoadExtras<LeanSaveLoad>();
  const std::string paper = saveLoadExtras<AuthorsSaveLoad>();
  for (const std::string& line : {lean, paper}) {
    CHECK(line.find("\"file_size_bytes\":56,") != std::string::npos);
    CHECK(line.find("\"save_s\":") != std::string::npos && line.find("\"save_s\":0,") == std::string::npos);
  }
  CHECK(lean.find("\"file_io\":\"stdio\"") != std::string::npos);
#if !defined(_WIN32)
  CHECK(paper.find("\"file_io\":\"mmap\"") != std::string::npos);  // the authors' mapped file
#endif
}

TEST_CASE("cpu clocks: why perf_event_open refused, and counts of a multiplexed counter") {
  const std::string vm = perfFailureReason(ENOENT, "2");
  CHECK(vm == "perf_event_open: ENOENT: no hardware cycle counter exposed (typical in a VM without PMU passthrough)");
  const std::string denied = perfFailureReason(EACCES, "3");
  CHECK(denied.find("EACCES") != std::string::npos && denied.find("perf_event_paranoid=3") != std::string::npos);
  CHECK(perfFailureReason(EPERM, "").find("perf_event_paranoid=?") != std::string::npos);
  CHECK(perfFailureReason(ENOSYS, "").find("without perf events") != std::string::npos);
  CHECK(scaledCount(1000, 50, 50).count == 1000u && scaledCount(1000, 50, 50).note.empty());
  const CounterValue half = scaledCount(1000, 100, 50);
  CHECK(half.count == 2000u && half.note.find("scaled: counted 50%") != std::string::npos);
  CHECK(!scaledCount(1000, 100, 0).count.has_value());
  CycleCounter counter;  // on any machine: a count from a named counter, or the reason there is none
  counter.start();
  const ClockReading reading = counter.stop();
  CHECK(!reading.source.empty());
  if (reading.cycles) CHECK(reading.source.rfind("perf_event_open", 0) == 0 || reading.source == "QueryProcessCycleTime");
}
