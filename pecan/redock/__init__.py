"""Redocking crystal complexes with AutoDock Vina into poses the converter reads (`pecan redock`)."""
