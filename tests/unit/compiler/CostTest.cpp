// The graph dialect's cost model (closed forms the planner relies on), its
// verifiers as seen from C++, and the MLIR-free shape helpers of ir/.

#include "ir/GraphDialect.h"
#include "ir/GraphOps.h"
#include "ir/ShapeUtils.h"
#include "ops/CostKey.h"
#include "ops/DeviceProfile.h"
#include "ops/OpTable.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace remat::graph;

namespace {

/// A context with the graph dialect, a module to build into, and the text of
/// every diagnostic emitted (so failed verifications stay off stderr).
struct GraphFixture {
  GraphFixture()
      : builder(&context), loc(builder.getUnknownLoc()),
        handler(&context, [this](mlir::Diagnostic &diag) {
          diagnostics.push_back(diag.str());
          return mlir::success();
        }) {
    context.loadDialect<GraphDialect>();
    module = mlir::ModuleOp::create(loc);
    builder.setInsertionPointToEnd(module.getBody());
  }
  ~GraphFixture() { module->erase(); }

  mlir::RankedTensorType f32(std::vector<int64_t> shape) {
    return mlir::RankedTensorType::get(shape, builder.getF32Type());
  }
  mlir::RankedTensorType f16(std::vector<int64_t> shape) {
    return mlir::RankedTensorType::get(shape, builder.getF16Type());
  }
  mlir::RankedTensorType i64(std::vector<int64_t> shape) {
    return mlir::RankedTensorType::get(shape, builder.getI64Type());
  }
  /// A value of the given type, from a graph.constant. Only its type
  /// matters: tests verify the op under test alone, so an index-typed
  /// constant (which would not verify) is fine as an operand.
  mlir::Value value(mlir::RankedTensorType type) {
    return builder.create<ConstantOp>(loc, type, 0.0f).getResult();
  }
  /// Verifies `op`; returns "" or the first diagnostic.
  std::string verify(mlir::Operation *op) {
    diagnostics.clear();
    if (mlir::succeeded(mlir::verify(op)))
      return "";
    return diagnostics.empty() ? "<no message>" : diagnostics.front();
  }

  mlir::MLIRContext context;
  mlir::OpBuilder builder;
  mlir::Location loc;
  mlir::ScopedDiagnosticHandler handler;
  mlir::ModuleOp module;
  std::vector<std::string> diagnostics;
};

constexpr int64_t kSaturated = std::numeric_limits<int64_t>::max();

} // namespace

TEST_CASE("every graph op is speculatable and implements the cost model",
          "[compiler]") {
  GraphFixture f;
  int graphOps = 0, differentiable = 0;
  for (mlir::RegisteredOperationName name :
       f.context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "graph")
      continue;
    ++graphOps;
    INFO(name.getStringRef().str());
    CHECK(name.hasInterface<CostOpInterface>());
    CHECK(name.hasTrait<mlir::OpTrait::ZeroRegions>());
    // Pure = AlwaysSpeculatable + no memory effects (CSE/DCE: pure.mlir).
    CHECK(name.hasTrait<mlir::OpTrait::AlwaysSpeculatableImplTrait>());
    CHECK(name.hasInterface<mlir::MemoryEffectOpInterface>());
    // Forward ops (the model format's, but for constant, and the
    // conversion --precision bf16 inserts) have a gradient.
    auto kind = remat::ops::parseOpKind(name.stripDialect().str());
    REQUIRE(kind);
    bool forward = (remat::ops::opInfo(*kind).inModelFormat &&
                    *kind != remat::ops::OpKind::Constant) ||
                   *kind == remat::ops::OpKind::Convert;
    CHECK(name.hasInterface<GradientOpInterface>() == forward);
    if (forward)
      ++differentiable;
  }
  // The dialect and the generated op table (ops/OpTable.h) hold the same
  // ops.
  CHECK(graphOps == remat::ops::kNumOpKinds);
  CHECK(differentiable > 0);
}

TEST_CASE("matmul with a shared rank-2 b costs 2·batch·M·N·K",
          "[compiler]") {
  GraphFixture f;
  // a [8, 2, 3], b [4, 3] with transpose_b: batch 8, M 2, K 3, N 4.
  auto op = f.builder.create<MatmulOp>(f.loc, f.f32({8, 2, 4}),
                                       f.value(f.f32({8, 2, 3})),
                                       f.value(f.f32({4, 3})),
                                       /*transpose_a=*/false,
                                       /*transpose_b=*/true);
  REQUIRE(f.verify(op) == "");
  auto cost = llvm::cast<CostOpInterface>(op.getOperation());
  CHECK(cost.getFlops() == 2 * 8 * 2 * 4 * 3);
  CHECK(cost.getBytesRead() == (8 * 2 * 3 + 4 * 3) * 4);
  CHECK(cost.getBytesWritten() == 8 * 2 * 4 * 4);
}

TEST_CASE("matmul with both transposes takes M and N from the swapped dims",
          "[compiler]") {
  GraphFixture f;
  // a [5, 7, 6] transposed is [5, 6, 7]: M 6, K 7; b [5, 9, 7] transposed is
  // [5, 7, 9]: N 9.
  auto op = f.builder.create<MatmulOp>(f.loc, f.f16({5, 6, 9}),
                                       f.value(f.f16({5, 7, 6})),
                                       f.value(f.f16({5, 9, 7})), true, true);
  REQUIRE(f.verify(op) == "");
  CHECK(op.getFlops() == 2 * 5 * 6 * 9 * 7);
  // f16: 2 bytes per element.
  CHECK(op.getBytesRead() == (5 * 7 * 6 + 5 * 9 * 7) * 2);
  CHECK(op.getBytesWritten() == 5 * 6 * 9 * 2);
}

TEST_CASE("softmax costs 5 FLOPs per element", "[compiler]") {
  GraphFixture f;
  auto op = f.builder.create<SoftmaxOp>(f.loc, f.f32({4, 10}),
                                        f.value(f.f32({4, 10})));
  REQUIRE(f.verify(op) == "");
  CHECK(op.getFlops() == 5 * 40);
  CHECK(op.getBytesRead() == 40 * 4);
  CHECK(op.getBytesWritten() == 40 * 4);
}

TEST_CASE("layer_norm costs 8 FLOPs per element and reads x, gamma and beta",
          "[compiler]") {
  GraphFixture f;
  auto op = f.builder.create<LayerNormOp>(
      f.loc, f.f32({2, 8}), f.value(f.f32({2, 8})), f.value(f.f32({8})),
      f.value(f.f32({8})));
  REQUIRE(f.verify(op) == "");
  CHECK(op.getEpsilon() == Approx(1e-5f));
  CHECK(op.getFlops() == 8 * 16);
  CHECK(op.getBytesRead() == (16 + 8 + 8) * 4);
  CHECK(op.getBytesWritten() == 16 * 4);
}

TEST_CASE("attention costs 4·B·H·S·S·Dh plus 5·B·H·S·S, causal or not",
          "[compiler]") {
  GraphFixture f;
  const int64_t b = 2, h = 4, s = 8, dh = 64;
  auto type = f.f32({b, h, s, dh});
  mlir::Value q = f.value(type);
  for (bool causal : {false, true}) {
    auto op = f.builder.create<AttentionOp>(f.loc, type, q, q, q, causal,
                                            0.125f);
    REQUIRE(f.verify(op) == "");
    CHECK(op.getFlops() == 4 * b * h * s * s * dh + 5 * b * h * s * s);
    CHECK(op.getBytesRead() == 3 * b * h * s * dh * 4);
    CHECK(op.getBytesWritten() == b * h * s * dh * 4);
  }
}

TEST_CASE("elementwise ops cost one FLOP per output element", "[compiler]") {
  GraphFixture f;
  auto op = f.builder.create<AddOp>(f.loc, f.f32({2, 3}),
                                    f.value(f.f32({2, 3})),
                                    f.value(f.f32({3})));
  REQUIRE(f.verify(op) == "");
  CHECK(op.getFlops() == 6);
  CHECK(op.getBytesRead() == (6 + 3) * 4);
}

TEST_CASE("bytes use the element size of each operand, i64 indices included",
          "[compiler]") {
  GraphFixture f;
  mlir::Value indices = f.value(f.i64({2, 5}));
  auto op = f.builder.create<EmbeddingOp>(
      f.loc, f.f32({2, 5, 16}), f.value(f.f32({100, 16})), indices);
  REQUIRE(f.verify(op) == "");
  CHECK(op.getFlops() == 0);
  CHECK(op.getBytesRead() == 100 * 16 * 4 + 10 * 8);
  CHECK(op.getBytesWritten() == 2 * 5 * 16 * 4);
}

TEST_CASE("costs saturate at INT64_MAX instead of overflowing", "[compiler]") {
  GraphFixture f;
  const int64_t big = int64_t{1} << 31;
  // 2^62 elements fit, but 2·2^93 FLOPs and 2^64 bytes do not.
  auto op = f.builder.create<MatmulOp>(f.loc, f.f32({big, big}),
                                       f.value(f.f32({big, big})),
                                       f.value(f.f32({big, big})));
  CHECK(op.getFlops() == kSaturated);
  CHECK(op.getBytesRead() == kSaturated);
  CHECK(op.getBytesWritten() == kSaturated);
}

TEST_CASE("a matmul with mismatched inner dims fails to verify from C++",
          "[compiler]") {
  GraphFixture f;
  auto op = f.builder.create<MatmulOp>(f.loc, f.f32({2, 4}),
                                       f.value(f.f32({2, 64})),
                                       f.value(f.f32({128, 4})));
  CHECK(f.verify(op) == "'graph.matmul' op 'b' has shape [128,4] but expects "
                        "K=64 (the first of its last two dims) to match 'a' "
                        "[2,64]");
}

TEST_CASE("a binary op with unbroadcastable shapes names the dim",
          "[compiler]") {
  GraphFixture f;
  auto op = f.builder.create<MulOp>(f.loc, f.f32({2, 4}),
                                    f.value(f.f32({2, 3})),
                                    f.value(f.f32({2, 4})));
  CHECK(f.verify(op) ==
        "'graph.mul' op 'a' [2,3] and 'b' [2,4] do not broadcast: dim 1 "
        "of the broadcast shape is 3 vs 4 (dims aligned on the right must be "
        "equal or 1)");
}

TEST_CASE("a wrong result shape reports the expected shape", "[compiler]") {
  GraphFixture f;
  auto op = f.builder.create<MatmulOp>(f.loc, f.f32({2, 5}),
                                       f.value(f.f32({2, 3})),
                                       f.value(f.f32({3, 4})));
  CHECK(f.verify(op) ==
        "'graph.matmul' op result has shape [2,5] but expects [2,4]");
}

TEST_CASE("a dynamic dim is rejected by the verifier", "[compiler]") {
  GraphFixture f;
  auto dynamic = f.f32({mlir::ShapedType::kDynamic, 3});
  mlir::Value x = f.builder.create<ConstantOp>(f.loc, dynamic, 1.0f);
  CHECK(f.verify(x.getDefiningOp()) ==
        "'graph.constant' op result must have a static shape, got "
        "'tensor<?x3xf32>'");
}

TEST_CASE("relu's gradient is relu_grad of its output y and dy", "[compiler]") {
  GraphFixture f;
  mlir::Value x = f.value(f.f32({4}));
  auto op = f.builder.create<ReluOp>(f.loc, f.f32({4}), x);
  mlir::Value dy = f.value(f.f32({4}));
  auto gradient = llvm::dyn_cast<GradientOpInterface>(op.getOperation());
  REQUIRE(gradient);
  llvm::SmallVector<mlir::Value> operandGrads;
  REQUIRE(mlir::succeeded(gradient.buildGradient(f.builder, {dy}, operandGrads)));
  REQUIRE(operandGrads.size() == 1);
  auto reluGrad = operandGrads[0].getDefiningOp<ReluGradOp>();
  REQUIRE(reluGrad);
  // The output, not the input: relu's input need not outlive relu.
  CHECK(reluGrad.getY() == op.getY());
  CHECK(reluGrad.getY() != x);
  CHECK(reluGrad.getDy() == dy);
  CHECK(f.verify(reluGrad) == "");
  // Gradient ops themselves are not differentiable.
  CHECK_FALSE(llvm::isa<GradientOpInterface>(reluGrad.getOperation()));
}

TEST_CASE("indices and labels get a null gradient", "[compiler]") {
  GraphFixture f;
  auto embedding = f.builder.create<EmbeddingOp>(
      f.loc, f.f32({2, 16}), f.value(f.f32({100, 16})),
      f.value(f.i64({2})));
  llvm::SmallVector<mlir::Value> grads;
  REQUIRE(mlir::succeeded(
      embedding.buildGradient(f.builder, {embedding.getY()}, grads)));
  REQUIRE(grads.size() == 2);
  CHECK(grads[0].getDefiningOp<EmbeddingGradOp>());
  CHECK(grads[0].getType() == f.f32({100, 16}));
  CHECK_FALSE(grads[1]);

  auto loss = f.builder.create<CrossEntropyOp>(
      f.loc, f.f32({}), f.value(f.f32({4, 10})),
      f.value(f.i64({4})));
  grads.clear();
  REQUIRE(mlir::succeeded(loss.buildGradient(f.builder, {loss}, grads)));
  REQUIRE(grads.size() == 2);
  CHECK(grads[0].getDefiningOp<CrossEntropyGradOp>());
  CHECK_FALSE(grads[1]);
}

TEST_CASE("an op whose result has no gradient gives none to its operands",
          "[compiler]") {
  GraphFixture f;
  auto op = f.builder.create<MatmulOp>(f.loc, f.f32({2, 4}),
                                       f.value(f.f32({2, 3})),
                                       f.value(f.f32({3, 4})));
  llvm::SmallVector<mlir::Value> grads;
  REQUIRE(mlir::succeeded(
      op.buildGradient(f.builder, {mlir::Value()}, grads)));
  REQUIRE(grads.size() == 2);
  CHECK_FALSE(grads[0]);
  CHECK_FALSE(grads[1]);
}

TEST_CASE("elementCount detects 64-bit overflow and dynamic dims",
          "[compiler]") {
  using namespace remat::shape;
  CHECK(elementCount(std::vector<int64_t>{}) == int64_t{1});
  CHECK(elementCount(std::vector<int64_t>{2, 3, 4}) == int64_t{24});
  CHECK(elementCount(std::vector<int64_t>{1 << 30, 1 << 30, 1 << 30}) ==
        std::nullopt);
  CHECK(elementCount(std::vector<int64_t>{-1, 3}) == std::nullopt);
  CHECK(saturatingElementCount(std::vector<int64_t>{1 << 30, 1 << 30, 16}) ==
        kSaturated);
  CHECK(formatShape(std::vector<int64_t>{2, -1}) == "[2, ?]");
}

TEST_CASE("a bf16 op call has a cost key of its own and the roofline's bf16 "
          "rate",
          "[compiler]") {
  using remat::ops::DType;
  using remat::ops::TensorType;
  std::vector<TensorType> f32 = {{DType::F32, {2, 3}}, {DType::F32, {3, 4}}};
  std::vector<TensorType> bf16 = {{DType::BF16, {2, 3}}, {DType::BF16, {3, 4}}};
  // A float32 call's key is its shapes alone (the profiles written before
  // dtypes entered the key still match).
  CHECK(remat::ops::opCostKey("matmul", nlohmann::json::object(), f32,
                              {{DType::F32, {2, 4}}}) ==
        "matmul {} [2,3],[3,4] -> [2,4]");
  CHECK(remat::ops::opCostKey("matmul", nlohmann::json::object(), bf16,
                              {{DType::BF16, {2, 4}}}) ==
        "matmul {} bf16[2,3],bf16[3,4] -> bf16[2,4]");
  remat::DeviceProfile h200 = *remat::builtinDeviceProfile("h200");
  CHECK(h200.opSeconds(int64_t(1e12), 0) ==
        Approx(1e12 / 50e12 + h200.launchSeconds));
  CHECK(h200.opSeconds(int64_t(1e12), 0, true) ==
        Approx(1e12 / 740e12 + h200.launchSeconds));
  // The cpu backend computes a bf16 GEMM in float32: no rate of its own.
  remat::DeviceProfile cpu = *remat::builtinDeviceProfile("cpu");
  CHECK(cpu.opSeconds(int64_t(1e11), 0, true) ==
        cpu.opSeconds(int64_t(1e11), 0));
}
