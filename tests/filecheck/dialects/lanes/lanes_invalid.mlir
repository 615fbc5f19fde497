// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of lanes.cmpf and lanes.select.

// CHECK: lanes.cmpf: lhs and rhs must be the same float vector type, got vector<8xi32> and vector<8xi32>
func.func @integers(%a: vector<8xi32>) {
  %m = "lanes.cmpf"(%a, %a) <{predicate = 3 : i64}> : (vector<8xi32>, vector<8xi32>) -> vector<8xi1>
  func.return
}

// -----

// CHECK: lanes.cmpf: lhs and rhs must be the same float vector type, got vector<8xf32> and vector<4xf32>
func.func @widths(%a: vector<8xf32>, %b: vector<4xf32>) {
  %m = "lanes.cmpf"(%a, %b) <{predicate = 3 : i64}> : (vector<8xf32>, vector<4xf32>) -> vector<8xi1>
  func.return
}

// -----

// CHECK: operand 'lhs' at position 0 does not verify:
// CHECK-NEXT: f32 should be of base attribute vector
func.func @scalar(%a: f32) {
  %m = "lanes.cmpf"(%a, %a) <{predicate = 3 : i64}> : (f32, f32) -> vector<8xi1>
  func.return
}

// -----

// CHECK: lanes.cmpf: predicate 15 is not one of arith.cmpf's 1..14 ('false' and 'true' are constants, not comparisons)
func.func @true(%a: vector<8xf32>) {
  %m = "lanes.cmpf"(%a, %a) <{predicate = 15 : i64}> : (vector<8xf32>, vector<8xf32>) -> vector<8xi1>
  func.return
}

// -----

// CHECK: lanes.cmpf: the result must be vector<8xi1>, got vector<4xi1>
func.func @result(%a: vector<8xf32>) {
  %m = "lanes.cmpf"(%a, %a) <{predicate = 3 : i64}> : (vector<8xf32>, vector<8xf32>) -> vector<4xi1>
  func.return
}

// -----

// CHECK: lanes.select: the mask must be vector<8xi1> (one lane per result lane), got vector<4xi1>
func.func @mask(%m: vector<4xi1>, %a: vector<8xf32>) {
  %y = lanes.select %m, %a, %a : vector<4xi1>, vector<8xf32>
  func.return
}

// -----

// CHECK: lanes.select: the result must be a fixed 1-D vector, got f32
func.func @scalar_select(%m: vector<4xi1>, %a: f32) {
  %y = lanes.select %m, %a, %a : vector<4xi1>, f32
  func.return
}
