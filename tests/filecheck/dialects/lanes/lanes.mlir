// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of lanes.cmpf and lanes.select (a float comparison and a select on
// vectors), custom and generic forms.

// CHECK-LABEL: func.func @clip_low
// CHECK: %m = lanes.cmpf oge, %x, %lo : vector<16xf32>
// CHECK: %u = lanes.cmpf uno, %x, %lo : vector<16xf32>
// CHECK: %y = lanes.select %m, %x, %lo : vector<16xi1>, vector<16xf32>
func.func @clip_low(%x: vector<16xf32>, %lo: vector<16xf32>) -> vector<16xf32> {
  %m = lanes.cmpf oge, %x, %lo : vector<16xf32>
  %u = lanes.cmpf uno, %x, %lo : vector<16xf32>
  %y = lanes.select %m, %x, %lo : vector<16xi1>, vector<16xf32>
  func.return %y : vector<16xf32>
}

// CHECK-LABEL: func.func @f64
// CHECK: %m = lanes.cmpf ult, %a, %b : vector<4xf64>
// CHECK: %y = lanes.select %m, %a, %b : vector<4xi1>, vector<4xf64>
func.func @f64(%a: vector<4xf64>, %b: vector<4xf64>) -> vector<4xf64> {
  %m = lanes.cmpf ult, %a, %b : vector<4xf64>
  %y = lanes.select %m, %a, %b : vector<4xi1>, vector<4xf64>
  func.return %y : vector<4xf64>
}
