//===- GradientOpInterface.cpp - VJP builder interface ----------*- C++ -*-===//

#include "ir/Interfaces/GradientOpInterface.h"

#include "ir/Interfaces/GradientOpInterface.cpp.inc"
