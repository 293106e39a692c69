"""Writes the test meshes of tests/mesh.rs with Gmsh's Python API (pip install gmsh meshio).

unit_cube_tet.msh / _bin.msh / .vtu: the unit cube [0,1]^3 in tetrahedra, physical volume
"solid", physical surfaces "bottom" (z = 0) and "top" (z = 1).
unit_cube_hex.msh: the unit cube in 4 x 4 x 4 hexahedra, physical volume "solid", surface
"bottom".
square_mixed.msh / _bin.msh / .vtu: the square [0,1]^2, its left half in triangles, its right
half in quadrilaterals; physical surface "plate", physical curve "left" (x = 0).
Run from this folder: python3 make_meshes.py
"""
import gmsh
import meshio


def cube_tet():
    gmsh.model.add("cube_tet")
    gmsh.model.occ.addBox(0, 0, 0, 1, 1, 1)
    gmsh.model.occ.synchronize()
    gmsh.option.setNumber("Mesh.MeshSizeMax", 0.35)
    faces = gmsh.model.getEntities(2)
    bottom = [t for d, t in faces if abs(gmsh.model.occ.getCenterOfMass(d, t)[2]) < 1e-9]
    top = [t for d, t in faces if abs(gmsh.model.occ.getCenterOfMass(d, t)[2] - 1) < 1e-9]
    gmsh.model.addPhysicalGroup(3, [1], name="solid")
    gmsh.model.addPhysicalGroup(2, bottom, name="bottom")
    gmsh.model.addPhysicalGroup(2, top, name="top")
    gmsh.model.mesh.generate(3)


def cube_hex():
    gmsh.model.add("cube_hex")
    gmsh.model.occ.addBox(0, 0, 0, 1, 1, 1)
    gmsh.model.occ.synchronize()
    for d, t in gmsh.model.getEntities(1):
        gmsh.model.mesh.setTransfiniteCurve(t, 5)
    for d, t in gmsh.model.getEntities(2):
        gmsh.model.mesh.setTransfiniteSurface(t)
        gmsh.model.mesh.setRecombine(2, t)
    gmsh.model.mesh.setTransfiniteVolume(1)
    faces = gmsh.model.getEntities(2)
    bottom = [t for d, t in faces if abs(gmsh.model.occ.getCenterOfMass(d, t)[2]) < 1e-9]
    gmsh.model.addPhysicalGroup(3, [1], name="solid")
    gmsh.model.addPhysicalGroup(2, bottom, name="bottom")
    gmsh.model.mesh.generate(3)


def square_mixed():
    gmsh.model.add("square_mixed")
    gmsh.model.occ.addRectangle(0, 0, 0, 0.5, 1)
    gmsh.model.occ.addRectangle(0.5, 0, 0, 0.5, 1)
    gmsh.model.occ.fragment([(2, 1)], [(2, 2)])
    gmsh.model.occ.synchronize()
    gmsh.option.setNumber("Mesh.MeshSizeMax", 0.15)
    right = [t for d, t in gmsh.model.getEntities(2)
             if gmsh.model.occ.getCenterOfMass(d, t)[0] > 0.5]
    for t in right:
        gmsh.model.mesh.setRecombine(2, t)
    curves = gmsh.model.getEntities(1)
    left = [t for d, t in curves if abs(gmsh.model.occ.getCenterOfMass(d, t)[0]) < 1e-9]
    gmsh.model.addPhysicalGroup(2, [t for d, t in gmsh.model.getEntities(2)], name="plate")
    gmsh.model.addPhysicalGroup(1, left, name="left")
    gmsh.model.mesh.generate(2)


def write(stem):
    gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
    gmsh.option.setNumber("Mesh.Binary", 0)
    gmsh.write(stem + ".msh")
    gmsh.option.setNumber("Mesh.Binary", 1)
    gmsh.write(stem + "_bin.msh")
    gmsh.option.setNumber("Mesh.Binary", 0)


gmsh.initialize()
gmsh.option.setNumber("General.Terminal", 0)
for make, stem, vtu in [(cube_tet, "unit_cube_tet", True), (cube_hex, "unit_cube_hex", False),
                        (square_mixed, "square_mixed", True)]:
    make()
    write(stem)
    if vtu:
        m = meshio.read(stem + ".msh")
        m.write(stem + ".vtu", binary=True, compression=None)
    gmsh.model.remove()
gmsh.finalize()
