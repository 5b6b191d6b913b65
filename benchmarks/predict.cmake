# predict_validate: the published tables in predict/published/ predicted row by row (scripts/validate_predict.sh).
add_executable(predict_validate predict_validate.cpp)
target_link_libraries(predict_validate PRIVATE parbench_predict)
