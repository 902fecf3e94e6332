//===- MixOps.cpp - mix op shape rules --------------------------------------===//
//
// One shape rule per op (see ShapeRule.h). Rules read ranked operand types;
// dynamic dimensions (B, T) are compatible with anything and stay dynamic.
//
//===----------------------------------------------------------------------===//
#include "mix/MixOps.h"
#include "abi/Actions.h"

#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mix;

#include "mix/ShapeInferenceOpInterfaces.cpp.inc"
#include "mix/ElementCodeOpInterfaces.cpp.inc"

namespace {
constexpr int64_t kDyn = ShapedType::kDynamic;

ArrayRef<int64_t> dims(Value v) {
  return v.getType().cast<RankedTensorType>().getShape();
}

Type f32Tensor(MLIRContext *ctx, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, FloatType::getF32(ctx));
}

/// Two dimensions agree unless both are static and differ.
bool agree(int64_t a, int64_t b) {
  return a == kDyn || b == kDyn || a == b;
}

/// The more specific of two agreeing dimensions.
int64_t meet(int64_t a, int64_t b) { return a == kDyn ? b : a; }

std::string dimStr(int64_t d) {
  return d == kDyn ? std::string("?") : std::to_string(d);
}

/// Emits "expects <what> of rank <rank>" unless `v` has that rank.
LogicalResult expectRank(Operation *op, Value v, StringRef what, int64_t rank) {
  if (dims(v).size() == static_cast<size_t>(rank))
    return success();
  return op->emitOpError() << "expects " << what << " of rank " << rank
                           << ", got " << v.getType();
}

LogicalResult expectDim(Operation *op, StringRef what, int64_t got,
                        int64_t want) {
  if (agree(got, want))
    return success();
  return op->emitOpError() << what << " is " << dimStr(got) << " but must be "
                           << dimStr(want);
}

/// Shared rule of ops that keep their input's type (elementwise, norms, taps).
LogicalResult sameAsInput(Operation *op, Value x, SmallVectorImpl<Type> &out) {
  out.push_back(x.getType());
  return success();
}

/// [B, T, C] inputs checked against each other; fills b, t.
LogicalResult sequenceDims(Operation *op, ArrayRef<std::pair<Value, StringRef>> seqs,
                           int64_t &b, int64_t &t) {
  b = kDyn;
  t = kDyn;
  for (auto [v, what] : seqs) {
    if (failed(expectRank(op, v, what, 3)))
      return failure();
    ArrayRef<int64_t> d = dims(v);
    if (!agree(d[0], b) || !agree(d[1], t))
      return op->emitOpError() << what << " has [B, T] = [" << dimStr(d[0])
                               << ", " << dimStr(d[1])
                               << "], which disagrees with the other inputs";
    b = meet(b, d[0]);
    t = meet(t, d[1]);
  }
  return success();
}
} // namespace

//===----------------------------------------------------------------------===//
// Parameters, constants, embeddings
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::shapeRule(SmallVectorImpl<Type> &out) {
  for (int64_t d : getShape())
    if (d <= 0)
      return emitOpError() << "shape dimensions must be positive, got " << d;
  out.push_back(f32Tensor(getContext(), getShape()));
  return success();
}

LogicalResult ConstantOp::shapeRule(SmallVectorImpl<Type> &out) {
  out.push_back(f32Tensor(getContext(), {}));
  return success();
}

LogicalResult TimeSliceOp::shapeRule(SmallVectorImpl<Type> &out) {
  if (failed(expectRank(*this, getTable(), "table", 2)))
    return failure();
  if (dims(getLike()).size() < 2)
    return emitOpError() << "expects `like` of rank >= 2 ([B, T, ...]), got "
                         << getLike().getType();
  out.push_back(f32Tensor(getContext(), {dims(getLike())[1], dims(getTable())[1]}));
  return success();
}

LogicalResult EmbeddingOp::shapeRule(SmallVectorImpl<Type> &out) {
  if (failed(expectRank(*this, getIds(), "ids", 2)) ||
      failed(expectRank(*this, getTable(), "table", 2)))
    return failure();
  out.push_back(f32Tensor(getContext(), {dims(getIds())[0], dims(getIds())[1],
                                         dims(getTable())[1]}));
  return success();
}

/// x [..., I] against a [O, I] matrix (linear's weight, unembed's table):
/// result [..., O].
static LogicalResult matrixRule(Operation *op, Value x, Value w, StringRef what,
                                SmallVectorImpl<Type> &out) {
  if (failed(expectRank(op, w, what, 2)))
    return failure();
  ArrayRef<int64_t> xs = dims(x), ws = dims(w);
  if (xs.empty())
    return op->emitOpError() << "expects x of rank >= 1";
  if (failed(expectDim(op, "x's last dimension", xs.back(), ws[1])))
    return failure();
  SmallVector<int64_t> shape(xs.begin(), xs.end());
  shape.back() = ws[0];
  out.push_back(f32Tensor(op->getContext(), shape));
  return success();
}

LogicalResult UnembedOp::shapeRule(SmallVectorImpl<Type> &out) {
  return matrixRule(*this, getX(), getTable(), "table", out);
}

LogicalResult LinearOp::shapeRule(SmallVectorImpl<Type> &out) {
  if (Value b = getBias())
    if (failed(expectRank(*this, b, "bias", 1)) || failed(expectRank(*this, getWeight(), "weight", 2)) ||
        failed(expectDim(*this, "bias size", dims(b)[0], dims(getWeight())[0])))
      return failure();
  return matrixRule(*this, getX(), getWeight(), "weight", out);
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// Trailing-dimension broadcasting, as in NumPy.
static LogicalResult broadcastRule(Operation *op, SmallVectorImpl<Type> &out) {
  ArrayRef<int64_t> a = dims(op->getOperand(0)), b = dims(op->getOperand(1));
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> shape(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    int64_t d;
    if (da == 1)
      d = db;
    else if (db == 1)
      d = da;
    else if (agree(da, db))
      d = meet(da, db);
    else
      return op->emitOpError()
             << "operands " << op->getOperand(0).getType() << " and "
             << op->getOperand(1).getType() << " do not broadcast";
    shape[rank - 1 - i] = d;
  }
  out.push_back(f32Tensor(op->getContext(), shape));
  return success();
}

LogicalResult AddOp::shapeRule(SmallVectorImpl<Type> &out) { return broadcastRule(*this, out); }
LogicalResult SubOp::shapeRule(SmallVectorImpl<Type> &out) { return broadcastRule(*this, out); }
LogicalResult MulOp::shapeRule(SmallVectorImpl<Type> &out) { return broadcastRule(*this, out); }
LogicalResult DivOp::shapeRule(SmallVectorImpl<Type> &out) { return broadcastRule(*this, out); }

#define MIX_SAME_AS_INPUT(OpT)                                                 \
  LogicalResult OpT::shapeRule(SmallVectorImpl<Type> &out) {                   \
    return sameAsInput(*this, getX(), out);                                    \
  }
MIX_SAME_AS_INPUT(NegOp)
MIX_SAME_AS_INPUT(AbsOp)
MIX_SAME_AS_INPUT(ExpOp)
MIX_SAME_AS_INPUT(SinOp)
MIX_SAME_AS_INPUT(SiluOp)
MIX_SAME_AS_INPUT(GeluOp)
MIX_SAME_AS_INPUT(ReluOp)
MIX_SAME_AS_INPUT(SoftplusOp)
MIX_SAME_AS_INPUT(SigmoidOp)
MIX_SAME_AS_INPUT(TapOp)
MIX_SAME_AS_INPUT(L2NormOp)
#undef MIX_SAME_AS_INPUT

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

/// Norm weights (and biases) are [D] with D the last dimension of x.
static LogicalResult normRule(Operation *op, Value x, ValueRange affine,
                              SmallVectorImpl<Type> &out) {
  if (dims(x).empty())
    return op->emitOpError() << "expects x of rank >= 1";
  for (Value p : affine)
    if (failed(expectRank(op, p, "weight/bias", 1)) ||
        failed(expectDim(op, "weight/bias size", dims(p)[0], dims(x).back())))
      return failure();
  out.push_back(x.getType());
  return success();
}

LogicalResult LayerNormOp::shapeRule(SmallVectorImpl<Type> &out) {
  return normRule(*this, getX(), {getWeight(), getBias()}, out);
}
LogicalResult RMSNormOp::shapeRule(SmallVectorImpl<Type> &out) {
  return normRule(*this, getX(), {getWeight()}, out);
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

LogicalResult SplitOp::shapeRule(SmallVectorImpl<Type> &out) {
  ArrayRef<int64_t> x = dims(getX());
  if (x.empty())
    return emitOpError() << "expects x of rank >= 1";
  if (getSizes().size() != getNumResults())
    return emitOpError() << "has " << getSizes().size() << " sizes but "
                         << getNumResults() << " results";
  int64_t total = 0;
  for (int64_t s : getSizes()) {
    if (s <= 0)
      return emitOpError() << "split sizes must be positive, got " << s;
    total += s;
  }
  if (failed(expectDim(*this, "sum of split sizes", total, x.back())))
    return failure();
  for (int64_t s : getSizes()) {
    SmallVector<int64_t> shape(x.begin(), x.end());
    shape.back() = s;
    out.push_back(f32Tensor(getContext(), shape));
  }
  return success();
}

LogicalResult ConcatOp::shapeRule(SmallVectorImpl<Type> &out) {
  if (getInputs().empty())
    return emitOpError() << "expects at least one input";
  SmallVector<int64_t> shape(dims(getInputs()[0]));
  if (shape.empty())
    return emitOpError() << "expects inputs of rank >= 1";
  shape.back() = 0;
  for (Value v : getInputs()) {
    ArrayRef<int64_t> d = dims(v);
    if (d.size() != shape.size())
      return emitOpError() << "expects inputs of one rank, got " << v.getType();
    for (size_t i = 0; i + 1 < d.size(); ++i) {
      if (!agree(d[i], shape[i]))
        return emitOpError() << "input " << v.getType()
                             << " disagrees with the others in dimension " << i;
      shape[i] = meet(shape[i], d[i]);
    }
    if (d.back() == kDyn || shape.back() == kDyn)
      shape.back() = kDyn;
    else
      shape.back() += d.back();
  }
  out.push_back(f32Tensor(getContext(), shape));
  return success();
}

LogicalResult ReshapeOp::shapeRule(SmallVectorImpl<Type> &out) {
  ArrayRef<int64_t> x = dims(getX());
  int64_t keep = getKeep();
  if (keep < 0 || keep > static_cast<int64_t>(x.size()))
    return emitOpError() << "keeps " << keep << " dimensions of a rank-"
                         << x.size() << " tensor";
  int64_t from = 1, to = 1;
  for (int64_t d : x.drop_front(keep)) {
    if (d == kDyn)
      return emitOpError() << "can only re-lay out static dimensions";
    from *= d;
  }
  for (int64_t d : getShape()) {
    if (d <= 0)
      return emitOpError() << "target dimensions must be positive, got " << d;
    to *= d;
  }
  if (from != to)
    return emitOpError() << "reshapes " << from << " elements into " << to;
  SmallVector<int64_t> shape(x.begin(), x.begin() + keep);
  shape.append(getShape().begin(), getShape().end());
  out.push_back(f32Tensor(getContext(), shape));
  return success();
}

LogicalResult PermuteOp::shapeRule(SmallVectorImpl<Type> &out) {
  ArrayRef<int64_t> x = dims(getX());
  ArrayRef<int64_t> perm = getPerm();
  if (perm.size() != x.size())
    return emitOpError() << "permutation has " << perm.size()
                         << " entries for a rank-" << x.size() << " tensor";
  SmallVector<bool> seen(x.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(x.size()) || seen[p])
      return emitOpError() << "is not a permutation of 0.." << x.size() - 1;
    seen[p] = true;
    shape.push_back(x[p]);
  }
  out.push_back(f32Tensor(getContext(), shape));
  return success();
}

LogicalResult SumOp::shapeRule(SmallVectorImpl<Type> &out) {
  ArrayRef<int64_t> x = dims(getX());
  int64_t rank = x.size(), axis = getAxis();
  if (axis < -rank || axis >= rank)
    return emitOpError() << "axis " << axis << " is out of range for rank " << rank;
  if (axis < 0)
    axis += rank;
  SmallVector<int64_t> shape(x.begin(), x.end());
  if (getKeepdim())
    shape[axis] = 1;
  else
    shape.erase(shape.begin() + axis);
  out.push_back(f32Tensor(getContext(), shape));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolutions
//===----------------------------------------------------------------------===//

/// Per-channel filters [rows, C] (or [C, cols]) for a [B, T, C] input.
static LogicalResult channelFilter(Operation *op, Value x, Value f,
                                   StringRef what, unsigned channelDim) {
  if (failed(expectRank(op, f, what, 2)))
    return failure();
  return expectDim(op, (what + "'s channel count").str(), dims(f)[channelDim],
                   dims(x)[2]);
}

LogicalResult CausalConvOp::shapeRule(SmallVectorImpl<Type> &out) {
  int64_t b, t;
  if (failed(sequenceDims(*this, {{getX(), "x"}}, b, t)) ||
      failed(channelFilter(*this, getX(), getWeight(), "weight", 0)))
    return failure();
  if (Value bias = getBias())
    if (failed(expectRank(*this, bias, "bias", 1)) ||
        failed(expectDim(*this, "bias size", dims(bias)[0], dims(getX())[2])))
      return failure();
  return sameAsInput(*this, getX(), out);
}

LogicalResult LongConvOp::shapeRule(SmallVectorImpl<Type> &out) {
  int64_t b, t;
  if (failed(sequenceDims(*this, {{getX(), "x"}}, b, t)) ||
      failed(channelFilter(*this, getX(), getFilter(), "filter", 1)))
    return failure();
  return sameAsInput(*this, getX(), out);
}

LogicalResult ShiftConvOp::shapeRule(SmallVectorImpl<Type> &out) {
  int64_t b, t;
  if (failed(sequenceDims(*this, {{getX(), "x"}}, b, t)) ||
      failed(channelFilter(*this, getX(), getB(), "b", 0)) ||
      failed(channelFilter(*this, getX(), getC(), "c", 0)))
    return failure();
  if (dims(getB()) != dims(getC()))
    return emitOpError() << "expects b and c of one shape, got "
                         << getB().getType() << " and " << getC().getType();
  return sameAsInput(*this, getX(), out);
}

LogicalResult DiagSSMOp::shapeRule(SmallVectorImpl<Type> &out) {
  if (failed(expectRank(*this, getX(), "x", 4)) ||
      failed(expectRank(*this, getLogDt(), "log_dt", 1)) ||
      failed(expectRank(*this, getLogAReal(), "log_a_real", 2)) ||
      failed(expectRank(*this, getAImag(), "a_imag", 2)) ||
      failed(expectRank(*this, getB(), "b", 3)) ||
      failed(expectRank(*this, getC(), "c", 3)))
    return failure();
  int64_t heads = dims(getX())[2];
  ArrayRef<int64_t> a = dims(getLogAReal());
  if (dims(getAImag()) != a)
    return emitOpError() << "expects a_imag of the shape of log_a_real, got "
                         << getAImag().getType();
  if (failed(expectDim(*this, "log_dt size", dims(getLogDt())[0], heads)) ||
      failed(expectDim(*this, "log_a_real heads", a[0], heads)) ||
      failed(expectDim(*this, "c heads", dims(getC())[0], heads)) ||
      failed(expectDim(*this, "c modes", dims(getC())[1], a[1])) ||
      failed(expectDim(*this, "c's last dimension (re, im)", dims(getC())[2], 2)))
    return failure();
  if (dims(getB()) != dims(getC()))
    return emitOpError() << "expects b of the shape of c, got " << getB().getType();
  return sameAsInput(*this, getX(), out);
}

//===----------------------------------------------------------------------===//
// Sequence mixers
//===----------------------------------------------------------------------===//

/// q, k [B, T, K] (same K), v [B, T, V] -> [B, T, V].
static LogicalResult qkvRule(Operation *op, Value q, Value k, Value v,
                             SmallVectorImpl<Type> &out) {
  int64_t b, t;
  if (failed(sequenceDims(op, {{q, "q"}, {k, "k"}, {v, "v"}}, b, t)) ||
      failed(expectDim(op, "k's feature size", dims(k)[2], dims(q)[2])))
    return failure();
  out.push_back(f32Tensor(op->getContext(), {b, t, dims(v)[2]}));
  return success();
}

LogicalResult SoftmaxAttentionOp::shapeRule(SmallVectorImpl<Type> &out) {
  return qkvRule(*this, getQ(), getK(), getV(), out);
}

LogicalResult LinearAttentionOp::shapeRule(SmallVectorImpl<Type> &out) {
  return qkvRule(*this, getQ(), getK(), getV(), out);
}

LogicalResult TaylorMapOp::shapeRule(SmallVectorImpl<Type> &out) {
  SmallVector<int64_t> shape(dims(getX()));
  if (shape.empty() || shape.back() == kDyn)
    return emitOpError() << "expects a static feature dimension";
  int64_t f = shape.back();
  shape.back() = 1 + f + f * f;
  out.push_back(f32Tensor(getContext(), shape));
  return success();
}

LogicalResult SelectiveScanOp::shapeRule(SmallVectorImpl<Type> &out) {
  int64_t b, t;
  if (failed(sequenceDims(*this, {{getX(), "x"}, {getDelta(), "delta"},
                                  {getB(), "b"}, {getC(), "c"}}, b, t)) ||
      failed(expectRank(*this, getA(), "a", 2)) ||
      failed(expectRank(*this, getD(), "d", 1)))
    return failure();
  int64_t channels = dims(getX())[2], state = dims(getA())[1];
  if (failed(expectDim(*this, "delta's channel count", dims(getDelta())[2], channels)) ||
      failed(expectDim(*this, "a's channel count", dims(getA())[0], channels)) ||
      failed(expectDim(*this, "b's state size", dims(getB())[2], state)) ||
      failed(expectDim(*this, "c's state size", dims(getC())[2], state)) ||
      failed(expectDim(*this, "d's size", dims(getD())[0], channels)))
    return failure();
  return sameAsInput(*this, getX(), out);
}

LogicalResult DeltaRuleOp::shapeRule(SmallVectorImpl<Type> &out) {
  if (failed(qkvRule(*this, getQ(), getK(), getV(), out)))
    return failure();
  int64_t b, t;
  if (failed(sequenceDims(*this, {{getQ(), "q"}, {getBeta(), "beta"}}, b, t)) ||
      failed(expectDim(*this, "beta's last dimension", dims(getBeta())[2], 1)))
    return failure();
  return success();
}

/// An intervention's subspace on x [B, T, ...]: channels [lo, hi) of the
/// last dimension, or head `head` of dimension 2 (x [B, T, H, ...]), or the
/// whole vector (all −1). `width` gets the values it changes per position
/// (unknown: kDynamic).
static LogicalResult subspaceRule(Operation *op, Value x, int64_t lo, int64_t hi, int64_t head, int64_t &width) {
  ArrayRef<int64_t> d = dims(x);
  width = d.back();
  if (head >= 0 && (lo >= 0 || hi >= 0))
    return op->emitOpError() << "takes a channel range or a head, not both";
  if (lo >= 0 || hi >= 0) {
    if (lo < 0 || hi <= lo)
      return op->emitOpError() << "channel range [" << lo << ":" << hi << ") is empty or negative";
    if (!ShapedType::isDynamic(d.back()) && hi > d.back())
      return op->emitOpError() << "channel range [" << lo << ":" << hi << ") exceeds the " << d.back()
                               << " channels of the last dimension";
    width = hi - lo;
  } else if (head >= 0) {
    if (d.size() < 4)
      return op->emitOpError() << "head " << head << " needs a [B, T, H, ...] value; this one has rank "
                               << d.size();
    if (!ShapedType::isDynamic(d[2]) && head >= d[2])
      return op->emitOpError() << "head " << head << " is out of range: the value has " << d[2] << " heads";
    width = 1;
    for (size_t k = 3; k < d.size(); ++k)
      width = ShapedType::isDynamic(d[k]) || ShapedType::isDynamic(width) ? ShapedType::kDynamic : width * d[k];
  }
  return success();
}

LogicalResult PatchOp::shapeRule(SmallVectorImpl<Type> &out) {
  int64_t width;
  if (failed(subspaceRule(*this, getX(), getLo(), getHi(), getHead(), width)))
    return failure();
  // I64Attr's getters return uint64_t: −1 (no range, no head) as signed.
  const int64_t das = static_cast<int64_t>(getDas()), lo = static_cast<int64_t>(getLo()),
                head = static_cast<int64_t>(getHead());
  if (das < 0)
    return emitOpError() << "das " << das << " is negative (0: a whole-vector patch)";
  if (das > 0) {
    if (lo >= 0 || head >= 0)
      return emitOpError() << "das learns its own subspace of the whole vector; it takes no channel range or head";
    if (getRole() == "all")
      return emitOpError() << "das acts at one position a document, not 'all'";
    int64_t values = 1; // a position's values: the product of x's dimensions after [B, T]
    for (int64_t d : dims(getX()).drop_front(2))
      values = ShapedType::isDynamic(d) || ShapedType::isDynamic(values) ? ShapedType::kDynamic : values * d;
    if (!ShapedType::isDynamic(values) && das > values)
      return emitOpError() << "das " << das << " exceeds the " << values << " values a position holds";
  }
  return sameAsInput(*this, getX(), out);
}

LogicalResult AblateOp::shapeRule(SmallVectorImpl<Type> &out) {
  StringRef kind = getKind();
  std::optional<mixc::Action> action = mixc::actionNamed(kind.str());
  if (!action || !mixc::isAblation(*action))
    return emitOpError() << "kind must be zero, mean, noise or add, got '" << kind << "'";
  if ((action == mixc::Action::Add) != getVector().has_value())
    return emitOpError() << "takes a vector exactly when its kind is add";
  int64_t width;
  if (failed(subspaceRule(*this, getX(), getLo(), getHi(), getHead(), width)))
    return failure();
  if (action == mixc::Action::Add && failed(expectDim(*this, "the added vector's length",
                                        static_cast<int64_t>(getVector()->size()), width)))
    return failure();
  return sameAsInput(*this, getX(), out);
}

#define GET_OP_CLASSES
//===----------------------------------------------------------------------===//
// StateEditOp
//===----------------------------------------------------------------------===//

LogicalResult StateEditOp::verify() {
  llvm::StringRef kind = getKind();
  std::optional<mixc::Action> action = mixc::actionNamed(kind.str());
  if (!action || !(*action == mixc::Action::Patch || mixc::isAblation(*action)))
    return emitOpError() << "kind '" << kind << "' is none of patch, zero, mean, noise, add";
  if (getRole() == "all")
    return emitOpError() << "acts at one step: a state is replaced once and the recurrence carries it on";
  if ((action == mixc::Action::Add) != getVector().has_value())
    return emitOpError() << (action == mixc::Action::Add ? "add needs a vector" : "only add takes a vector");
  if (static_cast<int64_t>(getCell()) < 0) // I64Attr getters return uint64_t
    return emitOpError() << "cell " << getCell() << " is negative";
  if (std::optional<llvm::StringRef> reader = getReader()) {
    if (!mixc::stateReaderNamed(reader->str()))
      return emitOpError() << "reader '" << *reader << "' is neither next nor output";
    if (getState())
      return emitOpError() << "reader applies to a built-in recurrence's state; a scan's state is read by its "
                              "next step only";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// FusedOp
//===----------------------------------------------------------------------===//

LogicalResult FusedOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError() << "has " << getInputs().size() << " inputs but its body takes "
                         << body.getNumArguments() << " arguments";
  for (auto [i, pair] : llvm::enumerate(llvm::zip(getInputs(), body.getArguments())))
    if (std::get<0>(pair).getType() != std::get<1>(pair).getType())
      return emitOpError() << "input " << i << " has type " << std::get<0>(pair).getType()
                           << " but the body's argument " << i << " has type "
                           << std::get<1>(pair).getType();
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError() << "yields " << yield.getValues().size()
                         << " values whose types differ from its " << getNumResults()
                         << " results";
  if (getKind().empty())
    return emitOpError() << "needs a kind (elementwise or the anchor primitive)";
  if (getKind() == "scan") { // one mix.scan on the block's arguments, in order (Fuse.cpp)
    auto scan = dyn_cast<ScanOp>(body.front());
    if (!scan || &body.front() != yield->getPrevNode() ||
        !llvm::equal(scan.getInputs(), body.getArguments()) || !llvm::equal(yield.getValues(), scan.getResults()))
      return emitOpError() << "of kind scan must hold one mix.scan of its arguments, in order, and yield its results";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ScanOp
//===----------------------------------------------------------------------===//

/// The time dimension of a scan: dim 1 of its first sliced input.
static int64_t scanTime(ScanOp op) {
  for (auto [in, sliced] : llvm::zip(op.getInputs(), op.getSliced()))
    if (sliced)
      if (auto t = in.getType().dyn_cast<RankedTensorType>(); t && t.getRank() >= 2)
        return t.getDimSize(1);
  return ShapedType::kDynamic;
}

static LogicalResult verifyScan(ScanOp op);

LogicalResult ScanOp::shapeRule(SmallVectorImpl<Type> &out) {
  // The rule reads the step's yield: its structure first (the shape-rule
  // trait runs before verify()).
  if (failed(verifyScan(*this)))
    return failure();
  auto yield = cast<YieldOp>(getBody().front().getTerminator());
  const int64_t states = static_cast<int64_t>(getNumStates()), time = scanTime(*this);
  for (Value v : yield.getValues().drop_front(std::min<size_t>(states, yield.getValues().size()))) {
    auto t = v.getType().dyn_cast<RankedTensorType>();
    if (!t) { // the body is not inferred yet
      out.push_back(UnrankedTensorType::get(Float32Type::get(getContext())));
      continue;
    }
    SmallVector<int64_t> shape(t.getShape().begin(), t.getShape().end());
    if (shape.empty())
      return emitOpError() << "emits a rank-0 value; an emitted value is [B, ...]";
    shape.insert(shape.begin() + 1, time);
    out.push_back(f32Tensor(getContext(), shape));
  }
  return success();
}

LogicalResult ScanOp::verify() { return verifyScan(*this); }

static LogicalResult verifyScan(ScanOp op) {
  auto emitOpError = [&]() { return op.emitOpError(); };
  auto getStateNames = [&]() { return op.getStateNames(); };
  auto getSliced = [&]() { return op.getSliced(); };
  auto getInputs = [&]() { return op.getInputs(); };
  auto getNumResults = [&]() { return op.getNumResults(); };
  Block &body = op.getBody().front();
  const int64_t states = static_cast<int64_t>(op.getNumStates());
  if (states < 0 || static_cast<int64_t>(getStateNames().size()) != states)
    return emitOpError() << "has " << getStateNames().size() << " state names for " << states << " states";
  if (getSliced().size() != getInputs().size())
    return emitOpError() << "has " << getSliced().size() << " sliced flags for " << getInputs().size() << " inputs";
  if (static_cast<int64_t>(body.getNumArguments()) != states + static_cast<int64_t>(getInputs().size()))
    return emitOpError() << "'s body takes " << body.getNumArguments() << " arguments, not " << states
                         << " states + " << getInputs().size() << " inputs";
  bool anySliced = false;
  for (auto [i, in] : llvm::enumerate(getInputs())) {
    Type arg = body.getArgument(states + i).getType();
    auto t = in.getType().dyn_cast<RankedTensorType>();
    if (!getSliced()[i]) {
      if (failed(verifyCompatibleShape(in.getType(), arg)))
        return emitOpError() << "input " << i << " is " << in.getType() << " but its body argument is " << arg;
      continue;
    }
    anySliced = true;
    if (!t)
      continue;
    if (t.getRank() < 2)
      return emitOpError() << "input " << i << " is sliced over time but is not [B, T, ...]: " << t;
    SmallVector<int64_t> step(t.getShape().begin(), t.getShape().end());
    step.erase(step.begin() + 1);
    if (failed(verifyCompatibleShape(RankedTensorType::get(step, t.getElementType()), arg)))
      return emitOpError() << "input " << i << " " << t << " is sliced over time, so its body argument should be "
                           << RankedTensorType::get(step, t.getElementType()) << ", not " << arg;
  }
  if (!anySliced)
    return emitOpError() << "slices no input over time: its length is unknown";
  if (body.empty() || !isa<YieldOp>(body.back()))
    return emitOpError() << "'s step must end in mix.yield";
  auto yield = cast<YieldOp>(body.back());
  if (static_cast<int64_t>(yield.getValues().size()) != states + static_cast<int64_t>(getNumResults()))
    return emitOpError() << "yields " << yield.getValues().size() << " values for " << states << " states and "
                         << getNumResults() << " results";
  for (int64_t k = 0; k < states; ++k)
    if (failed(verifyCompatibleShape(yield.getValues()[k].getType(), body.getArgument(k).getType())))
      return emitOpError() << "state " << k << " ('" << getStateNames()[k].cast<StringAttr>().getValue()
                           << "') is " << body.getArgument(k).getType() << " but its next value is "
                           << yield.getValues()[k].getType();
  return success();
}

/// `mix.yield %a, %b : t1, t2`, parsed one type at a time.
ParseResult YieldOp::parse(OpAsmParser &parser, OperationState &state) {
  SmallVector<OpAsmParser::UnresolvedOperand> operands;
  SmallVector<Type> types;
  if (parser.parseOperandList(operands) || parser.parseOptionalAttrDict(state.attributes))
    return failure();
  if (succeeded(parser.parseOptionalColon())) {
    do {
      Type t;
      if (parser.parseType(t))
        return failure();
      types.push_back(t);
    } while (succeeded(parser.parseOptionalComma()));
  }
  return parser.resolveOperands(operands, types, parser.getNameLoc(), state.operands);
}

void YieldOp::print(OpAsmPrinter &p) {
  if (!getValues().empty())
    p << " " << getValues();
  p.printOptionalAttrDict((*this)->getAttrs());
  if (!getValues().empty())
    p << " : " << getValues().getTypes();
}

#include "mix/MixOps.cpp.inc"
