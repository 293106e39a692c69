"""Writes notched_plate_2d.msh (Gmsh 4.1 ASCII) for models/notched_plate_mesh_2d.toml.

A 50 x 50 mm plate with an edge notch from the left side along y = 0, 15 mm long and 1 mm
wide with a round tip, meshed in triangles of about 0.8 mm. Physical surfaces: "grip_top"
and "grip_bottom" (strips 1.5 mm deep along y = +-25 mm) and "plate" (the rest); physical
curve "notch" (the notch's faces). Run from this folder: python3 notched_plate_2d.py
(pip install gmsh).
"""
import gmsh

gmsh.initialize()
gmsh.option.setNumber("General.Terminal", 0)
gmsh.model.add("notched_plate_2d")
occ = gmsh.model.occ
plate = occ.addRectangle(-0.025, -0.025, 0, 0.05, 0.05)
slot = occ.addRectangle(-0.026, -0.0005, 0, 0.0155, 0.001)
tip = occ.addDisk(-0.0105, 0, 0, 0.0005, 0.0005)
notch = occ.fuse([(2, slot)], [(2, tip)])[0]
body = occ.cut([(2, plate)], notch)[0]
top = occ.addRectangle(-0.025, 0.0235, 0, 0.05, 0.0015)
bottom = occ.addRectangle(-0.025, -0.025, 0, 0.05, 0.0015)
pieces, _ = occ.fragment(body, [(2, top), (2, bottom)])
occ.synchronize()
gmsh.option.setNumber("Mesh.MeshSizeMax", 0.8e-3)
gmsh.option.setNumber("Mesh.MeshSizeMin", 0.8e-3)
surfaces = gmsh.model.getEntities(2)
center = {t: occ.getCenterOfMass(2, t)[1] for _, t in surfaces}
grip_top = [t for t, y in center.items() if y > 0.0235]
grip_bottom = [t for t, y in center.items() if y < -0.0235]
rest = [t for t in center if t not in grip_top + grip_bottom]
gmsh.model.addPhysicalGroup(2, grip_top, name="grip_top")
gmsh.model.addPhysicalGroup(2, grip_bottom, name="grip_bottom")
gmsh.model.addPhysicalGroup(2, rest, name="plate")
faces = []
for _, c in gmsh.model.getEntities(1):
    x, y, _ = occ.getCenterOfMass(1, c)
    if -0.025 < x < -0.0095 and abs(y) <= 0.0005 + 1e-9:
        faces.append(c)
gmsh.model.addPhysicalGroup(1, faces, name="notch")
gmsh.model.mesh.generate(2)
gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
gmsh.option.setNumber("Mesh.Binary", 0)
gmsh.write("notched_plate_2d.msh")
gmsh.finalize()
