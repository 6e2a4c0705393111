// Axis: a static axis (by index, NumPy order), a dynamic axis (batch or sequence),
// or one of the special "all static axes" / "all axes" markers used by reductions.
#pragma once
#include <string>
#include <vector>

namespace cntk {

class Axis {
 public:
  enum class Kind { Static, Dynamic, AllStatic, All };

  Axis() : Axis(Kind::Static, 0, "") {}
  explicit Axis(int static_index) : Axis(Kind::Static, static_index, "") {}
  static Axis dynamic(const std::string& name, bool ordered = true) {
    Axis a(Kind::Dynamic, 0, name);
    a.ordered_ = ordered;
    return a;
  }
  static Axis default_batch_axis() { return dynamic("defaultBatchAxis", false); }
  static Axis default_dynamic_axis() { return dynamic("defaultDynamicAxis", true); }
  // Stands for the sequence axis of the operand, whatever it is named (CNTK's
  // Axis::OperandSequenceAxis): sequence reductions built before their operand's axes
  // are known (on placeholders) keep it and resolve it at each inference.
  static Axis operand_sequence_axis() { return dynamic("__operandSequenceAxis", true); }
  static Axis all_static_axes() { return Axis(Kind::AllStatic, 0, "AllStaticAxes"); }
  static Axis all_axes() { return Axis(Kind::All, 0, "AllAxes"); }
  static Axis new_unique_dynamic_axis(const std::string& name, bool ordered = true);
  // CNTK's "new leading axis" marker (splice/stack along a new outermost static axis).
  static Axis new_leading_axis() { return Axis(Kind::Static, kNewLeading, ""); }
  static std::vector<Axis> default_input_variable_dynamic_axes() { return {default_batch_axis()}; }
  static constexpr int kNewLeading = -1000000;

  Kind kind() const { return kind_; }
  bool is_static() const { return kind_ == Kind::Static; }
  bool is_dynamic() const { return kind_ == Kind::Dynamic; }
  bool is_batch() const { return kind_ == Kind::Dynamic && *name_ == "defaultBatchAxis"; }
  bool is_sequence() const { return kind_ == Kind::Dynamic && !is_batch(); }
  bool is_ordered() const { return kind_ == Kind::Static || ordered_; }
  int static_index() const { return index_; }
  std::string name() const;
  bool operator==(const Axis& o) const { return kind_ == o.kind_ && index_ == o.index_ && name_ == o.name_; }
  bool operator!=(const Axis& o) const { return !(*this == o); }

 private:
  Axis(Kind k, int index, const std::string& name) : kind_(k), index_(index), name_(intern(name)) {}
  // Names are interned: copying an Axis copies a pointer, and equal names share one.
  static const std::string* intern(const std::string& name);
  Kind kind_;
  int index_;
  const std::string* name_;
  bool ordered_ = true;
};

// Normalizes a (possibly negative) static axis index against a rank; throws ValueError.
int normalize_axis(int axis, size_t rank, const char* op);

}  // namespace cntk
